"""A real container engine for the tests: Podman serving the Docker API, and
stand-in images built from Debian packages where third-party images cannot be
pulled. Test scaffolding only; nothing here goes into a product image."""
