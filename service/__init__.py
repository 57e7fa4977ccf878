"""The benchmark service: Flask REST API, auth, validation, jobs, object storage."""
