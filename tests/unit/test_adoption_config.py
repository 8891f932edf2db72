"""Adoption settings are checked when the Config is made, before anything connects."""

from __future__ import annotations

import pytest

from dbos_trio import Config, DBOSConfigError


def test_adoption_sooner_than_three_heartbeats_is_refused_naming_both_settings() -> None:
    with pytest.raises(DBOSConfigError, match="adopt_dead_executors_after") as refused:
        Config(app_name="app", heartbeat_interval=10.0, adopt_dead_executors_after=20.0)
    assert "three heartbeat intervals (30.0 s)" in str(refused.value)
    assert Config(app_name="app", heartbeat_interval=1.0, adopt_dead_executors_after=3.0)


def test_the_heartbeat_interval_must_be_positive() -> None:
    with pytest.raises(DBOSConfigError, match="heartbeat_interval"):
        Config(app_name="app", heartbeat_interval=0.0)


def test_adoption_is_on_by_default_and_can_be_switched_off() -> None:
    assert Config(app_name="app").adopt_dead_executors_after == 60.0
    # A long heartbeat stretches the default window rather than being refused by it.
    assert Config(app_name="app", heartbeat_interval=30.0).adopt_dead_executors_after == 180.0
    switched_off = Config(app_name="app", adopt_dead_executors_after=None)
    assert switched_off.adopt_dead_executors_after is None
