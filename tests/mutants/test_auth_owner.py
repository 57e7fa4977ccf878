"""What mutation testing of auth found unchecked in a token's owner: it is kept lowercased,
and what is no owner (not text, or not the pattern) is refused naming the field."""

from __future__ import annotations

import pytest

from service.auth.tokens import normal_owner
from service.errors import ValidationFailed


def test_an_owner_is_kept_lowercased():
    assert normal_owner("Lab-X.2_b") == "lab-x.2_b"
    assert normal_owner("a" * 64) == "a" * 64


@pytest.mark.parametrize("owner", [None, 7, ["lab"], "", "-lab", ".lab", "lab x", "lab/x",
                                   "a" * 65, "läb"])
def test_what_is_no_owner_is_refused_naming_the_field(owner):
    with pytest.raises(ValidationFailed) as refused:
        normal_owner(owner)
    assert refused.value.field == "owner"
    assert refused.value.message == (
        "owner (who the token is for: its sealed quota and Ladder are shared by every token of "
        "the owner) must be 1-64 letters, digits or ._- starting with a letter or digit, got "
        f"{owner!r}")
