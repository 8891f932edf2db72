"""The payload store's reference format, the directory store and the codec's use of them
(no database): references are never values, entries are whole and stored once, and bad
configuration is refused at construction."""

from __future__ import annotations

import base64
import json
import os
import pickle
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dbos_trio import Client, Config, DBOSConfigError, DBOSPayloadError, DirectoryPayloadStore
from dbos_trio._core.payload_refs import (
    REFERENCE_PREFIX,
    looks_like_reference,
    parse_reference,
    reference_for,
)
from dbos_trio._serialization import Codec, PickleSerializer, PortableJSONSerializer

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)


@given(json_values)
def test_no_stored_pickle_or_json_value_looks_like_a_reference(value: object) -> None:
    assert not looks_like_reference(PickleSerializer().serialize(value))
    assert not looks_like_reference(PortableJSONSerializer().serialize(value))
    # Even a string that *is* a reference's text is stored as a JSON string, quoted.
    assert not looks_like_reference(json.dumps(reference_for(b"x").text()))


def test_a_reference_round_trips_and_a_malformed_or_newer_one_is_refused() -> None:
    ref = reference_for(b"hello")
    assert parse_reference(ref.text()) == ref and ref.size == 5
    assert ref.text().startswith(REFERENCE_PREFIX + "1:")
    with pytest.raises(ValueError, match="malformed"):
        parse_reference(REFERENCE_PREFIX + "1:abc:5")
    with pytest.raises(ValueError, match="version 2 is not readable"):
        parse_reference(ref.text().replace(":1:", ":2:", 1))


def test_the_directory_store_keeps_one_whole_file_per_content(tmp_path: Path) -> None:
    store = DirectoryPayloadStore(tmp_path / "s")
    ref = reference_for(b"value")
    store.put(ref.sha256, b"value")
    store.put(ref.sha256, b"value")
    files = [p for p in (tmp_path / "s").rglob("*") if p.is_file()]
    assert files == [store.path_of(ref.sha256)]  # no temporary file left, one entry
    assert store.get(ref.sha256) == b"value"
    assert list(store.unused_since(0)) == []
    old = files[0].stat().st_mtime - 100
    os.utime(files[0], (old, old))
    assert list(store.unused_since(old + 1)) == [ref.sha256]
    store.put(ref.sha256, b"value")  # used again: renewed, no longer a candidate
    assert list(store.unused_since(old + 1)) == []
    assert store.delete([ref.sha256], unused_before=old + 1) == 0  # renewed: kept
    assert store.delete([ref.sha256]) == 1 and files[0].exists() is False


def test_the_codec_stores_over_the_threshold_and_resolves_on_every_decode(
    tmp_path: Path,
) -> None:
    store = DirectoryPayloadStore(tmp_path)
    codec = Codec(PickleSerializer(), payload_store=store, payload_store_threshold=1024)
    small = codec.encode("x" * 10)
    assert not looks_like_reference(small)
    big = "y" * 5000
    stored = codec.encode(big)
    assert looks_like_reference(stored) and codec.decode(stored, "py_pickle") == big
    inputs = codec.encode_inputs((big,), {"k": big}, "portable_json")
    assert codec.decode_inputs(inputs, "portable_json") == ((big,), {"k": big})
    # Without the store, a reader is told where the value is.
    bare = Codec(PickleSerializer())
    with pytest.raises(DBOSPayloadError, match=r"stored in the payload store: sha256 [0-9a-f]{64}"):
        bare.decode(stored, "py_pickle")


def test_a_serializer_writing_the_reserved_prefix_is_refused_before_any_write() -> None:
    class Sneaky(PickleSerializer):
        def serialize(self, value: object) -> str:
            return REFERENCE_PREFIX + base64.b64encode(pickle.dumps(value)).decode()

    with pytest.raises(DBOSPayloadError, match="reserved for payload store references"):
        Codec(Sneaky()).encode(1)


def test_bad_payload_store_configuration_is_refused_at_construction(tmp_path: Path) -> None:
    store = DirectoryPayloadStore(tmp_path)
    with pytest.raises(DBOSConfigError, match=r"Config\.payload_store: .* must implement"):
        Config(app_name="app", payload_store=str(tmp_path))  # type: ignore[arg-type]
    with pytest.raises(DBOSConfigError, match="payload_store_threshold: 10 must be"):
        Config(app_name="app", payload_store=store, payload_store_threshold=10)
    with pytest.raises(DBOSConfigError, match="not under max_value_bytes"):
        Config(
            app_name="app",
            payload_store=store,
            payload_store_threshold=2**20,
            max_value_bytes=2**20,
        )
    with pytest.raises(DBOSConfigError, match="Client payload_store_threshold"):
        Client("sqlite:///x.sqlite", payload_store=store, payload_store_threshold=True)
