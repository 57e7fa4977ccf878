"""The fields of a create request, each given once and in the one place it is read.

A multipart upload carries its fields in the form and a raw-body upload in
the query string. A field given twice, a second file part, or query
parameters on a multipart upload would otherwise be dropped without a word
(Werkzeug keeps the first value), so each is an error naming the field.
"""

from __future__ import annotations

from flask import Request

from service.errors import ValidationFailed


def request_fields(request: Request) -> dict[str, str]:
    """Form fields of a multipart request, else query parameters; every name at most once."""
    if request.mimetype == "multipart/form-data":
        if request.args:
            name = next(iter(request.args))
            raise ValidationFailed(f"a multipart upload reads its fields from the form, not the query "
                                   f"string: send '{name[:80]}' as a form field", field=name[:80])
        for name in request.files:
            if len(request.files.getlist(name)) > 1:
                raise ValidationFailed(f"the upload has more than one '{name[:80]}' part",
                                       field=name[:80])
        values = request.form
    else:
        values = request.args
    for name in values:
        if len(values.getlist(name)) > 1:
            raise ValidationFailed(f"field '{name[:80]}' is given more than once", field=name[:80])
    return values.to_dict()
