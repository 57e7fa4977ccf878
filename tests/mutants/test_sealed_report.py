"""The sealed report's numbers, its Ladder state and its page, to the digit.

What mutation testing of `service.sealed.report` and `leaderboard.site.sealed_html`
showed untested: the exact document of a sealed report (schema, rounding of the
advantage and of the bound, the verdict's text), the references computed from a
known matrix, a repeated submission answered from the Ladder's record after the
best has moved, ladders kept apart per submitter and setting, and what the page
shows (each row, "not released", escaping, language and character set).
"""

from __future__ import annotations

import math
import threading
from html.parser import HTMLParser

import numpy as np
import pytest
import redis as redis_lib

from leaderboard.matrix import SceneTable, TransferData
from leaderboard.site.html_report import render_report_html
from leaderboard.site.sealed_html import is_sealed_report, render_sealed_html
from service.process import defaults
from service.sealed.ladder import Release
from service.sealed.report import (SealedNumbers, audit_sealed, release_for, sealed_numbers,
                                   sealed_report)
from service.store.storage import LocalStore, S3Store



def _data(y: list[list[int]]) -> TransferData:
    """A one-seed setting whose success matrix is `y` (K, Q)."""
    outcomes = np.array(y, dtype=np.int8)[:, :, None]
    k, q = outcomes.shape[:2]
    scenes = SceneTable(scene_ids=tuple(f"s{j}" for j in range(q)),
                        state_ids=np.array([f"st{j}" for j in range(q)], dtype=object),
                        layout_level=np.zeros(q, dtype=np.int64),
                        appearance_draw=np.zeros(q, dtype=np.int64))
    return TransferData(experience_ids=tuple(f"e{i}" for i in range(k)), scenes=scenes,
                        outcomes=outcomes)


# ------------------------------------------------------------- the numbers


def test_the_numbers_of_a_known_matrix():
    """Random is the matrix's mean, oracle the mean of each scene's best, the rule's success
    that of the highest score in each scene."""
    data = _data([[1, 1, 0, 0, 0],
                  [0, 1, 1, 0, 0],
                  [0, 0, 0, 1, 0]])
    scores = np.array([[3, 0, 0, 0, 9],
                       [1, 2, 5, 0, 0],
                       [0, 1, 0, 7, 1]])  # picks e0, e1, e1, e2, e0
    assert sealed_numbers(data, scores) == SealedNumbers(
        success_rule=0.8, success_random=5 / 15, success_oracle=0.8, n_experiences=3,
        n_scenes=5)


def _numbers(random: float, oracle: float) -> SealedNumbers:
    return SealedNumbers(success_rule=0.0, success_random=random, success_oracle=oracle,
                         n_experiences=10, n_scenes=200)


def test_a_new_best_is_reported_with_every_released_number():
    """Margin 0.08: random 0.05 and oracle 0.71 go to the grid (0.08, 0.72); A from the
    released 0.32 is 0.24/0.64 = 0.375; the bound of two submissions has one decimal."""
    release = Release(value=0.32, best=0.32, previous_best=0.24, margin=0.08)
    assert sealed_report("stack-hidden", _numbers(0.05, 0.71), release, 2) == {
        "schema_version": "expaudit-sealed-report/1",
        "sealed": True,
        "inputs": {"setting_id": "stack-hidden", "n_experiences": 10, "n_scenes": 200},
        "reference": {"success_rule": 0.32, "success_random": 0.08, "success_oracle": 0.72,
                      "advantage": 0.375},
        "release": {"rule": "ladder", "margin": 0.08, "new_best": True, "best": 0.32,
                    "previous_best": 0.24, "information_bound_bits": 33.6,
                    "n_submissions": 2},
        "verdict": {"label": "sealed",
                    "text": "Success 0.32 (rounded to the setting's margin of 0.08); your "
                            "best on this setting."},
    }
    assert 13 * math.log2(3) + 13 == pytest.approx(33.6045, abs=1e-4)


def test_a_submission_below_the_margin_releases_no_number():
    release = Release(value=None, best=0.4, previous_best=0.4, margin=0.08)
    report = sealed_report("stack-hidden", _numbers(0.05, 0.71), release, 3)
    assert report["reference"] == {"success_rule": None, "success_random": 0.08,
                                   "success_oracle": 0.72, "advantage": None}
    assert report["release"]["new_best"] is False
    assert (report["release"]["best"], report["release"]["previous_best"]) == (0.4, 0.4)
    assert report["verdict"] == {
        "label": "sealed",
        "text": "Not above your best of 0.40 by the margin of 0.08: no new score is released "
                "for this submission."}


def test_the_advantage_is_rounded_to_six_decimals():
    """(0.24 - 0) / (0.72 - 0) = 1/3."""
    release = Release(value=0.24, best=0.24, previous_best=None, margin=0.08)
    report = sealed_report("s", _numbers(0.0, 0.71), release, 1)
    assert report["reference"]["advantage"] == 0.333333


def test_no_advantage_when_oracle_and_random_share_a_grid_value():
    """Both round to 0.48: no room between them, so A is undefined, not a division by 0."""
    release = Release(value=0.48, best=0.48, previous_best=None, margin=0.08)
    report = sealed_report("s", _numbers(0.47, 0.50), release, 1)
    assert report["reference"]["advantage"] is None
    assert report["reference"]["success_rule"] == 0.48


# ---------------------------------------------------------------- the Ladder


def test_a_repeated_submission_gets_its_first_release_after_the_best_moved(store, redis_conn):
    """A re-executed audit with a different score (or margin) still reports what that
    submission released the first time, previous best included."""
    first = release_for(store, redis_conn, "tok-a", "s", "sub-1", 0.5, 0.25)
    second = release_for(store, redis_conn, "tok-a", "s", "sub-2", 0.8, 0.25)
    assert second == Release(value=0.75, best=0.75, previous_best=0.5, margin=0.25)
    assert release_for(store, redis_conn, "tok-a", "s", "sub-2", 0.1, 0.5) == second
    assert release_for(store, redis_conn, "tok-a", "s", "sub-1", 1.0, 0.5) == first == \
        Release(value=0.5, best=0.5, previous_best=None, margin=0.25)
    third = release_for(store, redis_conn, "tok-a", "s", "sub-3", 0.9, 0.25)
    assert third == Release(value=None, best=0.75, previous_best=0.75, margin=0.25)


def test_the_ladder_is_kept_in_an_s3_store_as_well(seaweed_server, redis_conn):
    """The deployment's store (a real S3 server): the record written is read back."""
    seaweed_server.make_bucket("ladder")
    s3 = S3Store(seaweed_server.client(), "ladder", prefix="svc")
    first = release_for(s3, redis_conn, "tok-a", "s", "sub-1", 0.5, 0.25)
    assert release_for(s3, redis_conn, "tok-a", "s", "sub-2", 0.8, 0.25) == \
        Release(value=0.75, best=0.75, previous_best=0.5, margin=0.25)
    assert release_for(s3, redis_conn, "tok-a", "s", "sub-1", 1.0, 0.25) == first


def test_each_submitter_and_setting_has_its_own_ladder(store, redis_conn):
    release_for(store, redis_conn, "tok-a", "s", "sub-1", 0.9, 0.25)
    assert release_for(store, redis_conn, "tok-b", "s", "sub-2", 0.5, 0.25).previous_best is None
    assert release_for(store, redis_conn, "tok-a", "t", "sub-3", 0.5, 0.25).previous_best is None
    assert release_for(store, redis_conn, "tok-a", "s", "sub-4", 0.5, 0.25).value is None


def test_the_bound_counts_the_submitters_submissions_on_the_setting(store, redis_conn):
    """Four scenes (margin 0.5, G = 3): the n-th report states 3 log2(n + 1) + 3 bits."""
    data = _data([[1, 1, 0, 0], [0, 0, 1, 1]])
    scores = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])  # success 1.0
    audit_sealed(store, redis_conn, "tok-b", "s", "sub-0", data, scores)  # another submitter
    reports = [audit_sealed(store, redis_conn, "tok-a", "s", f"sub-{n}", data, scores)
               for n in (1, 2, 3)]
    assert [r["release"]["n_submissions"] for r in reports] == [1, 2, 3]
    assert [r["release"]["information_bound_bits"] for r in reports] == [6.0, 7.8, 9.0]
    assert reports[0]["release"]["margin"] == 0.5
    assert reports[0]["reference"]["success_rule"] == 1.0
    assert reports[1]["reference"]["success_rule"] is None


class _StuckStore(LocalStore):
    """A store whose Ladder writes hang until `go_on` is set: an audit stuck (or dead)
    while it holds its Ladder's lock. `inside` is set once it is stuck there."""

    def __init__(self, root) -> None:
        super().__init__(root)
        self.inside, self.go_on = threading.Event(), threading.Event()

    def put_bytes(self, key, data, content_type="application/octet-stream"):
        self.inside.set()
        self.go_on.wait()
        return super().put_bytes(key, data, content_type)


class _Stuck:
    """An audit of tok-a on setting s, stuck inside its Ladder's lock, run in a thread."""

    def __init__(self, root, redis) -> None:
        self.store = _StuckStore(root)
        self.errors: list[Exception] = []
        self.thread = threading.Thread(target=self._run, args=(redis,), daemon=True)

    def _run(self, redis) -> None:
        try:
            release_for(self.store, redis, "tok-a", "s", "sub-stuck", 0.5, 0.25)
        except Exception as exc:  # the lock it lost, reported to the test
            self.errors.append(exc)

    def __enter__(self) -> _Stuck:
        self.thread.start()
        assert self.store.inside.wait(60)
        return self

    def __exit__(self, *exc) -> None:
        self.store.go_on.set()
        self.thread.join(60)


def test_an_audit_waits_for_a_ladder_lock_no_longer_than_the_limit(tmp_path, redis_conn,
                                                                  monkeypatch):
    """defaults.LADDER_LOCK_TIMEOUT_S is also the longest wait: a second audit of the same
    submitter and setting gives up (the job is retried) instead of hanging on a stuck one."""
    with _Stuck(tmp_path / "store", redis_conn):
        monkeypatch.setattr(defaults, "LADDER_LOCK_TIMEOUT_S", 0.3)
        outcome: list = []

        def wait() -> None:
            try:
                outcome.append(release_for(LocalStore(tmp_path / "store"), redis_conn, "tok-a",
                                           "s", "sub-2", 0.5, 0.25))
            except redis_lib.exceptions.LockError as exc:
                outcome.append(exc)

        waiting = threading.Thread(target=wait, daemon=True)
        waiting.start()
        waiting.join(20)
        assert len(outcome) == 1 and isinstance(outcome[0], redis_lib.exceptions.LockError)


def test_a_ladder_lock_held_past_its_lifetime_lapses(tmp_path, redis_conn, monkeypatch):
    """A worker that dies inside the lock leaves it behind; it lapses after
    LADDER_LOCK_TIMEOUT_S (here 1 s), well inside the next audit's wait (here 20 s)."""
    monkeypatch.setattr(defaults, "LADDER_LOCK_TIMEOUT_S", 1)
    with _Stuck(tmp_path / "store", redis_conn) as stuck:
        monkeypatch.setattr(defaults, "LADDER_LOCK_TIMEOUT_S", 20)
        release = release_for(LocalStore(tmp_path / "store"), redis_conn, "tok-a", "s", "sub-2",
                              0.5, 0.25)
    assert release == Release(value=0.5, best=0.5, previous_best=None, margin=0.25)
    assert [type(e) for e in stuck.errors] == [redis_lib.exceptions.LockNotOwnedError]


def test_a_stuck_audit_holds_up_only_its_own_submitters_ladder_on_its_setting(
        tmp_path, redis_conn, monkeypatch):
    with _Stuck(tmp_path / "store", redis_conn):
        monkeypatch.setattr(defaults, "LADDER_LOCK_TIMEOUT_S", 0.5)
        store = LocalStore(tmp_path / "store")
        assert release_for(store, redis_conn, "tok-b", "s", "sub-2", 0.5, 0.25).new_best
        assert release_for(store, redis_conn, "tok-a", "t", "sub-3", 0.5, 0.25).new_best


# ------------------------------------------------------------------ the page


class _Page(HTMLParser):
    """What a reader of the page gets: its language, character set, viewport, every piece
    of text in order (`text`, with the element holding it) and the table's rows."""

    def __init__(self) -> None:
        super().__init__()
        self.doctype = self.lang = self.charset = self.viewport = None
        self.text: list[tuple[str | None, str]] = []
        self.scopes: list[str | None] = []
        self._open: list[str] = []

    def handle_decl(self, decl):
        self.doctype = decl

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "html":
            self.lang = attrs.get("lang")
        if tag == "meta" and "charset" in attrs:
            self.charset = attrs["charset"]
        if tag == "meta" and attrs.get("name") == "viewport":
            self.viewport = attrs.get("content")
        if tag == "th":
            self.scopes.append(attrs.get("scope"))
        if tag not in ("meta", "html", "head", "body", "main", "table", "tr"):
            self._open.append(tag)
            self.text.append((tag, ""))

    def handle_endtag(self, tag):
        if self._open and self._open[-1] == tag:
            self._open.pop()

    def handle_data(self, data):
        if self._open and self.text[-1][0] == self._open[-1]:
            self.text[-1] = (self._open[-1], self.text[-1][1] + data)
        else:  # text outside any element that holds text
            self.text.append((None, data))

    def of(self, tag: str) -> list[str]:
        return [text for where, text in self.text if where == tag]

    @property
    def rows(self) -> list[tuple[str, str]]:
        return list(zip(self.of("th"), self.of("td")))


def _page(report: dict) -> _Page:
    page = _Page()
    page.feed(render_sealed_html(report))
    page.close()
    return page


EXPLANATION = ("A sealed setting releases only these numbers, through the Ladder: a score is "
               "shown when it beats your best by the margin, rounded to it. See the "
               "sealed-settings documentation.")


def test_the_page_of_a_new_best_shows_each_released_number():
    release = Release(value=0.24, best=0.24, previous_best=None, margin=0.08)
    report = sealed_report("stack-hidden", _numbers(0.0, 0.71), release, 1)
    page = _page(report)
    # an HTML5 page in English and UTF-8 (the case of these names does not matter)
    assert (page.doctype.lower(), page.lang.lower(), page.charset.lower()) == \
        ("doctype html", "en", "utf-8")
    assert page.viewport == "width=device-width, initial-scale=1"
    rows = [("Success of your choices", "0.24"),
            ("Your best on this setting", "0.24"),
            ("Random selection", "0.00"),
            ("Oracle selection", "0.72"),
            ("Advantage A", "0.333"),
            ("Margin (the Ladder's step)", "0.08")]
    assert page.text == [("title", "Sealed audit: stack-hidden"),
                         ("h1", "Sealed audit: stack-hidden"),
                         ("p", report["verdict"]["text"]),
                         *[cell for row in rows for cell in zip(("th", "td"), row)],
                         ("p", EXPLANATION)]
    assert page.scopes == ["row"] * 6


def test_the_page_of_a_submission_below_the_margin_says_not_released():
    release = Release(value=None, best=0.4, previous_best=0.4, margin=0.08)
    page = _page(sealed_report("stack-hidden", _numbers(0.05, 0.71), release, 2))
    assert page.rows == [("Success of your choices", "not released"),
                         ("Your best on this setting", "0.40"),
                         ("Random selection", "0.08"),
                         ("Oracle selection", "0.72"),
                         ("Advantage A", "not released"),
                         ("Margin (the Ladder's step)", "0.08")]
    assert page.of("p")[0].startswith("Not above your best of 0.40")


def test_the_page_escapes_the_setting_and_the_verdict():
    release = Release(value=0.5, best=0.5, previous_best=None, margin=0.25)
    report = sealed_report("<b>s&t</b>", _numbers(0.0, 1.0), release, 1)
    report["verdict"]["text"] = "<script>alert(1)</script>"
    text = render_sealed_html(report)
    assert "<b>" not in text and "<script>" not in text
    page = _page(report)
    assert page.of("h1") == ["Sealed audit: <b>s&t</b>"]
    assert page.of("p")[0] == "<script>alert(1)</script>"


def test_only_a_sealed_report_gets_the_sealed_page():
    release = Release(value=0.5, best=0.5, previous_best=None, margin=0.25)
    report = sealed_report("s", _numbers(0.0, 1.0), release, 1)
    assert is_sealed_report(report) and render_report_html(report) == render_sealed_html(report)
    assert not is_sealed_report({**report, "sealed": False})
    assert not is_sealed_report({"inputs": {"setting_id": "s"}})
    assert "Sealed audit" not in render_report_html({"inputs": {"setting_id": "s"}})
