"""store.faults: a storage fault named in the words the user needs, not in Rust's."""

from __future__ import annotations

import errno

from store.faults import fault_name


def test_a_known_fault_is_named_by_the_operating_system() -> None:
    assert fault_name(OSError(errno.ENOSPC, "whatever")) == "No space left on device"


def test_a_lance_error_loses_its_rust_source_location() -> None:
    error = RuntimeError("lance error: Not found: tmp/d/index/incidents.lance/data/ab12.lance, "
                         "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/"
                         "lance-io-0.38.2/src/object_store.rs:612:31\nmore detail")
    assert fault_name(error) == "lance error: Not found: tmp/d/index/incidents.lance/data/ab12.lance"
