"""Fixtures for the exporter tests; the builders live in level_builders.py."""

import pytest
from level_builders import box_level, empty_level


@pytest.fixture
def box():
    return box_level()


@pytest.fixture
def empty():
    return empty_level()
