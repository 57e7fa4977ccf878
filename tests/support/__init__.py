"""Helpers shared by the tests: real servers, small frozen data, hand-worked cases, the container
engine harness. Fixtures live in the `conftest.py` files; test modules import helpers from here
and never from one another."""
