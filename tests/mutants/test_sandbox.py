"""The sandbox's limits, /input checks and scores read-back at their edges.

What mutation testing of `sandbox` showed untested: each limit's
smallest allowed value, outcome-like keys nested in lists and in a library
item's metadata, unsafe ids, the item a refusal names, what meta.json holds,
a scores file exactly at its cap, ids that look like numbers, and the checks
made again once the scores file is open (a file that grew or was replaced
since it was checked: a directory, a FIFO, a link or nothing made the read
fail with an error of the service, or wait forever for a FIFO's writer).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from leaderboard.errors import InputError
from leaderboard.scores import output as scores_output
from sandbox import defaults, protocol
from expaudit.numerics import kernel_env
from sandbox.base import (Limits, RunSpec, RunStatus, SandboxConfigError, TailBuffer,
                                 check_io_dirs, classify_exit, sandbox_env)
from sandbox.demo import demo_data
from sandbox.protocol import ProtocolError, prepare_input, read_output


# ------------------------------------------------------------------ limits

SMALLEST = {"wall_seconds": 0.1, "memory_bytes": 16 * defaults.MIB, "pids": 1, "cpus": 0.01,
            "output_bytes": 4096, "tmp_bytes": 4096}
BELOW = {"wall_seconds": 0.09, "memory_bytes": 16 * defaults.MIB - 1, "pids": 0, "cpus": 0.009,
         "output_bytes": 4095, "tmp_bytes": 4095}


def test_each_limit_accepts_its_smallest_value():
    limits = Limits(**SMALLEST)
    assert [getattr(limits, name) for name in SMALLEST] == list(SMALLEST.values())


@pytest.mark.parametrize("name", sorted(BELOW))
def test_each_limit_refuses_a_value_just_below_its_smallest(name):
    with pytest.raises(SandboxConfigError) as refused:
        Limits(**{**SMALLEST, name: BELOW[name]})
    assert str(refused.value) == (f"limits field '{name}': value {BELOW[name]!r} must be a "
                                  f"number >= {SMALLEST[name]}")


# ------------------------------------------------------------------ the spec


def test_a_spec_holds_paths_a_command_tuple_and_its_own_copy_of_the_environment(tmp_path):
    env = {"SEED": "1"}
    spec = RunSpec(image="x", input_dir=str(tmp_path / "in"), output_dir=str(tmp_path / "out"),
                   command=["python", "-c", "pass"], env=env)
    env["SEED"] = "2"
    assert (spec.input_dir, spec.output_dir) == (tmp_path / "in", tmp_path / "out")
    assert isinstance(spec.input_dir, Path) and isinstance(spec.output_dir, Path)
    assert spec.command == ("python", "-c", "pass") and spec.env == {"SEED": "1"}
    assert type(spec.env) is dict


@pytest.mark.parametrize("change, message", [
    ({"command": ("python", 3)}, "run spec field 'command': value ('python', 3) must be "
                                 "non-empty strings"),
    ({"env": {"SEED": "1\x002"}}, "run spec field 'env': value of 'SEED' must be text"),
])
def test_a_spec_refuses_a_command_or_environment_that_cannot_be_passed_on(tmp_path, change,
                                                                          message):
    with pytest.raises(SandboxConfigError) as refused:
        RunSpec(image="x", input_dir=tmp_path, output_dir=tmp_path, **change)
    assert str(refused.value) == message


def test_the_run_directories_are_checked_before_a_run(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    check_io_dirs(RunSpec(image="x", input_dir=tmp_path / "in", output_dir=tmp_path / "out"))
    (tmp_path / "out" / "left.csv").write_text("x")
    cases = [(tmp_path / "none", tmp_path / "out",
              f"run spec field 'input_dir': value '{tmp_path / 'none'}' is not a directory"),
             (tmp_path / "in", tmp_path / "out",
              f"run spec field 'output_dir': value '{tmp_path / 'out'}' must be an existing "
              f"empty directory"),
             (tmp_path / "in", tmp_path / "none",
              f"run spec field 'output_dir': value '{tmp_path / 'none'}' must be an existing "
              f"empty directory")]
    for input_dir, output_dir, message in cases:
        with pytest.raises(SandboxConfigError) as refused:
            check_io_dirs(RunSpec(image="x", input_dir=input_dir, output_dir=output_dir))
        assert str(refused.value) == message


# ------------------------------------------------------------------ /input


def _replace(item, **change):
    return type(item)(**{**item.__dict__, **change})


@pytest.mark.parametrize("meta, where, key", [
    ({"runs": [{"note": 1}, {"reward": 0.5}]}, "library item 'demo-e000'.runs", "reward"),
    ({"episodes": ({"steps": [{"Transfer": 1}]},)}, "library item 'demo-e000'.episodes.steps",
     "Transfer"),
    ({"SUCCESS": True}, "library item 'demo-e000'", "SUCCESS"),
])
def test_outcome_keys_in_a_library_items_metadata_are_refused(tmp_path, small_demo, meta, where, key):
    """Wherever they sit: at the top, in a list of records, in a tuple of them."""
    setting, library, scenes = small_demo
    bad = _replace(library[0], meta=meta)
    with pytest.raises(ProtocolError) as refused:
        prepare_input(tmp_path / "in", setting, [bad, library[1]], scenes)
    assert str(refused.value) == (f"{where}: field '{key}' looks like an outcome and may not "
                                  f"be given to a selector")
    assert not (tmp_path / "in" / "library" / "demo-e000").exists()


def test_a_library_items_refusals_name_the_item(tmp_path, small_demo):
    setting, library, scenes = small_demo
    cases = [(_replace(library[1], base_png=b"GIF89a"),
              "library item 'demo-e001': the image is not PNG data"),
             (_replace(library[1], object_positions={"cubeA": [0.0, 1.0]}),
              "library item 'demo-e001': field 'object_positions.cubeA' value [0.0, 1.0] must "
              "be three finite numbers")]
    for n, (bad, message) in enumerate(cases):
        with pytest.raises(ProtocolError) as refused:
            prepare_input(tmp_path / f"in{n}", setting, [library[0], bad], scenes)
        assert str(refused.value) == message


def test_a_library_items_meta_json_holds_its_id_positions_and_metadata(tmp_path, small_demo):
    setting, library, scenes = small_demo
    item = _replace(library[0], meta={"task": "demo", "camera": "front"})
    root = prepare_input(tmp_path / "in", setting, [item, library[1]], scenes)
    meta = json.loads((root / "library" / "demo-e000" / "meta.json").read_text())
    assert meta == {"task": "demo", "camera": "front", "experience_id": "demo-e000",
                    "object_positions": {name: list(map(float, xyz))
                                         for name, xyz in item.object_positions.items()}}


def test_trajectories_of_every_numeric_kind_are_written_and_others_refused(tmp_path, small_demo):
    setting, library, scenes = small_demo
    arrays = {"flags": np.array([True, False]), "steps": np.arange(3, dtype=np.int16),
              "ticks": np.arange(2, dtype=np.uint32), "eef_pos": np.zeros((2, 3))}
    root = prepare_input(tmp_path / "in", setting,
                         [_replace(library[0], trajectory=arrays), library[1]], scenes)
    with np.load(root / "library" / "demo-e000" / "trajectory.npz", allow_pickle=False) as npz:
        assert {name: npz[name].dtype for name in npz.files} == \
            {name: array.dtype for name, array in arrays.items()}
    for n, bad in enumerate((np.array([1j]), np.array(["a"]), np.array([b"a"]))):
        with pytest.raises(ProtocolError, match=f"has dtype {bad.dtype}; only numeric"):
            prepare_input(tmp_path / f"bad{n}", setting,
                          [_replace(library[0], trajectory={"x": bad}), library[1]], scenes)



@pytest.mark.parametrize("bad_id", [".", "..", "e/1", "", "e\0"])
def test_an_id_that_is_no_plain_directory_name_is_refused(tmp_path, small_demo, bad_id):
    """Before anything is written: "." and ".." would write into library/ itself or the
    tree above it, and a NUL byte cannot be in a path at all."""
    setting, library, scenes = small_demo
    unsafe = type(setting)(setting.setting_id, setting.task, setting.experience_ids,
                           (bad_id, *setting.scene_ids[1:]))
    with pytest.raises(ProtocolError) as refused:
        prepare_input(tmp_path / "in", unsafe, library, [_replace(scenes[0], scene_id=bad_id),
                                                           *scenes[1:]])
    assert str(refused.value) == f"field 'scene_ids': value {bad_id!r} cannot be a directory name"
    assert not (tmp_path / "in").exists()


def test_a_scenes_meta_json_holds_its_ids_draw_positions_and_metadata(tmp_path, small_demo):
    setting, library, scenes = small_demo
    scene = _replace(scenes[1], meta={"camera": "front"}, layout_level=np.int64(3),
                     appearance_draw=np.int8(1))
    root = prepare_input(tmp_path / "in", setting, library, [scenes[0], scene, scenes[2]])
    meta = json.loads((root / "scenes" / "demo-q001" / "meta.json").read_text())
    assert meta == {"camera": "front", "scene_id": "demo-q001", "state_id": "demo-state000",
                    "layout_level": 3, "appearance_draw": 1,
                    "object_positions": {name: list(map(float, xyz))
                                         for name, xyz in scene.object_positions.items()}}


def test_a_scenes_bad_positions_are_refused_naming_the_scene(tmp_path, small_demo):
    setting, library, scenes = small_demo
    bad = _replace(scenes[2], object_positions={"cubeB": [0.0, float("inf"), 1.0]})
    with pytest.raises(ProtocolError) as refused:
        prepare_input(tmp_path / "in", setting, library, [*scenes[:2], bad])
    assert str(refused.value) == ("scene 'demo-q002': field 'object_positions.cubeB' value "
                                  "[0.0, inf, 1.0] must be three finite numbers")


def test_ids_out_of_order_are_refused_naming_the_first_five(tmp_path):
    setting, library, scenes = demo_data(n_experiences=2, n_scenes=7)
    with pytest.raises(ProtocolError) as refused:
        prepare_input(tmp_path / "in", setting, library, scenes[::-1])
    given = [f"demo-q{j:03d}" for j in (6, 5, 4, 3, 2)]
    expected = [f"demo-q{j:03d}" for j in range(5)]
    assert str(refused.value) == (f"field 'scene_ids': the items given {given}... are not the "
                                  f"setting's {expected}... in order")


def test_the_input_directory_and_its_parents_are_created(tmp_path, small_demo):
    root = prepare_input(tmp_path / "runs" / "r1" / "in", *small_demo)
    assert json.loads((root / "setting.json").read_text())["q"] == 3


def test_a_scores_file_of_exactly_the_cap_is_read_whole(tmp_path):
    """Its last byte included (no newline at the end: a lost byte would change the score)."""
    (tmp_path / "scores.csv").write_bytes(b"scene_id,experience_id,score\nq0,e0,12")
    size = (tmp_path / "scores.csv").stat().st_size
    assert read_output(tmp_path, ["e0"], ["q0"], max_bytes=size).scores.tolist() == [[12.0]]


def test_ids_that_look_like_numbers_are_read_as_text(tmp_path):
    (tmp_path / "scores.csv").write_text("scene_id,experience_id,score\n007,1e3,0.5\n"
                                         "007,NA,1.5\n")
    scores = read_output(tmp_path, ["1e3", "NA"], ["007"])
    assert scores.scores.tolist() == [[0.5], [1.5]]


class _ChangedAfterTheCheck:
    """The `os` module as `sandbox.protocol` sees it, except that `lstat` of the
    one scores file runs `change(path)` once, right after the file was checked: a writer
    still busy with the file (the race the checks after opening it are for). Nothing else
    in the process is affected."""

    def __init__(self, scores: Path, change) -> None:
        self._scores, self._change = scores, change

    def __getattr__(self, name):
        return getattr(os, name)

    def lstat(self, path, *args, **kwargs):
        info = os.lstat(path, *args, **kwargs)
        if Path(path) == self._scores and self._change is not None:
            change, self._change = self._change, None
            change(self._scores)
        return info


def _after_the_check(monkeypatch, scores: Path, change) -> None:
    monkeypatch.setattr(protocol, "os", _ChangedAfterTheCheck(scores, change))


def test_a_scores_file_that_grows_past_the_cap_after_the_check_is_refused(tmp_path,
                                                                           monkeypatch):
    scores = tmp_path / "scores.csv"
    scores.write_bytes(b"scene_id,experience_id,score\nq0,e0,1\n")
    cap = scores.stat().st_size

    def grow(path):
        with open(path, "ab") as handle:
            handle.write(b"q0,e0,1\n")

    _after_the_check(monkeypatch, scores, grow)
    with pytest.raises(InputError) as refused:
        read_output(tmp_path, ["e0"], ["q0"], max_bytes=cap)
    assert str(refused.value) == (f"/output/scores.csv: grew past the cap of {cap} bytes "
                                  f"while read")
    assert scores.stat().st_size == cap + 8


def _directory(path):
    path.mkdir()


def _fifo(path):
    os.mkfifo(path)


def _link(path):
    path.symlink_to(path.parent / "elsewhere.csv")


def _nothing(path):
    pass


@pytest.mark.parametrize("put, message", [
    (_directory, "is not a regular file"),
    (_fifo, "is not a regular file"),  # opening it must not wait for a writer
    (_link, "is not a regular file"),
    (_nothing, "the selector wrote no scores file"),
])
def test_a_scores_file_swapped_after_the_check_is_refused(tmp_path, monkeypatch, put, message):
    """Whatever replaces the checked file is refused as the selector's output fault,
    never an error of the service (nor a read that waits forever for a writer)."""
    scores = tmp_path / "scores.csv"
    scores.write_bytes(b"scene_id,experience_id,score\nq0,e0,1\n")
    (tmp_path / "elsewhere.csv").write_bytes(scores.read_bytes())

    def swap(path):
        path.unlink()
        put(path)

    _after_the_check(monkeypatch, scores, swap)
    with pytest.raises(InputError) as refused:
        read_output(tmp_path, ["e0"], ["q0"])
    assert str(refused.value) == f"/output/scores.csv: {message}"


def test_an_empty_scores_file_is_refused_as_such(tmp_path):
    (tmp_path / "scores.csv").write_bytes(b"")
    with pytest.raises(InputError) as refused:
        read_output(tmp_path, ["e0"], ["q0"])
    assert str(refused.value) == "/output/scores.csv: file is empty (no header line)"


@pytest.mark.parametrize("body, reader_says", [
    (b'scene_id,experience_id,score\n"q0,e0,1\n', "EOF inside string starting at row 1"),
    (b"scene_id,experience_id,score\nq0,e\xff0,1\n",
     "'utf-8' codec can't decode byte 0xff in position 33: invalid start byte"),
])
def test_an_unreadable_scores_file_is_refused_with_the_readers_words(tmp_path, body, reader_says):
    """One line of the CSV reader's own message: what is wrong and where."""
    (tmp_path / "scores.csv").write_bytes(body)
    with pytest.raises(InputError) as refused:
        read_output(tmp_path, ["e0"], ["q0"])
    message = str(refused.value)
    assert message.startswith("/output/scores.csv: cannot be read as CSV: ")
    assert message.endswith(reader_says) and "\n" not in message


def test_an_error_without_text_is_named_by_its_type(tmp_path, monkeypatch):
    (tmp_path / "scores.csv").write_bytes(b"scene_id,experience_id,score\nq0,e0,1\n")

    def read_csv(*args, **kwargs):
        raise ValueError("  ")

    monkeypatch.setattr(scores_output.pd, "read_csv", read_csv)
    with pytest.raises(InputError) as refused:
        read_output(tmp_path, ["e0"], ["q0"])
    assert str(refused.value) == "/output/scores.csv: cannot be read as CSV: ValueError"


# ------------------------------------------------------------- the run's end

LIMITS = Limits(wall_seconds=3, memory_bytes=64 * defaults.MIB, pids=8, cpus=1.5,
                output_bytes=4096)


def test_the_selectors_environment_is_exactly_the_fixed_one_plus_the_specs(tmp_path):
    spec = RunSpec(image="x", input_dir=tmp_path, output_dir=tmp_path, limits=LIMITS,
                   env={"SEED": "3"})
    assert sandbox_env(spec, input_path="/in", output_path="/out") == {
        "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp",
        "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
        "OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "2", "MKL_NUM_THREADS": "2",
        "EXPAUDIT_INPUT": "/in", "EXPAUDIT_OUTPUT": "/out", **kernel_env(), "SEED": "3"}


def test_a_crash_without_error_text_has_a_bare_reason():
    assert classify_exit(exit_code=2, timed_out=False, limits=LIMITS) == \
        (RunStatus.CRASHED, "exited with code 2")


def test_a_signal_unknown_to_python_is_named_by_its_number():
    assert classify_exit(exit_code=-200, timed_out=False, limits=LIMITS) == \
        (RunStatus.CRASHED, "killed by signal 200")


def test_the_last_error_line_is_cut_at_300_characters():
    line = "E" * 299 + "xyz"
    status, reason = classify_exit(exit_code=1, timed_out=False, limits=LIMITS,
                                   stderr_tail=f"Traceback\n{line}\n\n")
    assert (status, reason) == (RunStatus.CRASHED,
                                f"exited with code 1 (last error line: {'E' * 299}x)")


def test_a_log_tail_counts_every_byte_it_dropped():
    tail = TailBuffer(cap=4)
    tail.feed(b"abcde")  # one byte over
    assert tail.text() == "[... 1 earlier bytes dropped ...]\nbcde"
    tail.feed(b"fg")
    assert tail.text() == "[... 3 earlier bytes dropped ...]\ndefg"
