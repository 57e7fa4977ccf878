"""The catalog's errors sit on the one exception tree and keep their messages: an unknown
setting is the registry's error (one `except` catches both), missing data is `DataNotFound`."""

from __future__ import annotations

import pytest

from benchmark_data.registry import UnknownSettingError, get_setting
from expaudit.errors import DataNotFound, UnknownName, UserError
from service.catalog.catalog import BenchmarkCatalog, DataUnavailable, SelectorsUnsupported, UnknownSetting


def test_an_unknown_setting_is_the_registrys_error_with_its_own_message():
    with pytest.raises(UnknownSettingError) as caught:
        BenchmarkCatalog().get_setting("stack-k99", "setting")
    exc = caught.value
    assert isinstance(exc, UnknownSetting) and isinstance(exc, UnknownName)
    assert isinstance(exc, KeyError)  # callers that catch KeyError still do
    assert str(exc) == "unknown setting 'stack-k99'" and exc.field == "setting"


def test_the_registrys_unknown_setting_message_is_not_quoted():
    with pytest.raises(UnknownSettingError) as caught:
        get_setting("stack-k99")
    assert str(caught.value).startswith("unknown setting 'stack-k99'; valid setting ids: ")
    assert not isinstance(caught.value, UnknownSetting)


def test_unavailable_data_and_unsupported_selectors_are_user_errors_with_their_messages():
    missing = DataUnavailable("stack-replay-k3-orig", "its frozen data has not been generated")
    assert isinstance(missing, DataNotFound) and isinstance(missing, LookupError)
    assert str(missing) == ("the data of setting 'stack-replay-k3-orig' is not available here: "
                            "its frozen data has not been generated")
    unsupported = SelectorsUnsupported("door-policy-k3-orig")
    assert isinstance(unsupported, UserError) and isinstance(unsupported, LookupError)
    assert str(unsupported).startswith("setting 'door-policy-k3-orig' takes scores files only")


def test_missing_frozen_data_is_data_unavailable(tmp_path):
    catalog = BenchmarkCatalog(tmp_path)
    with pytest.raises(DataUnavailable, match="stack-replay-k3-orig"):
        catalog.pair_ids("stack-replay-k3-orig")
