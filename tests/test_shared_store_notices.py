# ruff: noqa: F811  (the S3 fixtures are imported by name, as conftest imports fake_ollama)
"""A shared-index failure is said in one plain line — what happened (unreachable, denied, not
found, corrupt…) and what to do — never with LanceDB's or object_store's raw text (Rust
source paths, cargo registry paths, XML bodies): that goes to the audit log only (issue 22,
item 14). Real CLI, moto's S3 server, real LanceDB."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from store.shared import SharedUnavailable, Store, store_fault, unavailable_error
from tests.s3_server import free_port, s3_bucket, s3_env, s3_server  # noqa: F401
from tests.test_cli import call_cli

ALERT = "payments-api connection timeouts to postgres after deploy, HikariPool exhausted"
RAW = re.compile(r"lance error|LanceError|\.rs:\d|cargo|registry/src|<\?xml|Error\(|"
                 r"object_store|Traceback", re.IGNORECASE)


def cli(*args: str, extra_env: dict[str, str] | None = None, **kwargs: Any) -> Any:
    """``call_cli`` with lexical recall (call_cli clears TRIAGE_EMBED_MODEL from the machine's
    environment; the embedder is not the point here, and a MiniLM build is the slow part)."""
    return call_cli(*args, extra_env={"TRIAGE_EMBED_MODEL": "none", **(extra_env or {})},
                    **kwargs)


def _bucket() -> tuple[Any, str, str]:
    """A signed S3 client for the shared index's bucket, the bucket, and the prefix."""
    import boto3

    bucket, root = os.environ["TRIAGE_INDEX_URI"].removeprefix("s3://").split("/", 1)
    client = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                          region_name=os.environ["AWS_REGION"],
                          aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
                          aws_secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"])
    return client, bucket, root


def _damage(table: str, how: str) -> int:
    """Every data file of ``table`` in the published version deleted, or overwritten."""
    client, bucket, root = _bucket()
    listed = client.list_objects_v2(Bucket=bucket, Prefix=f"{root}/v/").get("Contents", [])
    keys = [o["Key"] for o in listed
            if f"/{table}.lance/data/" in o["Key"] and o["Key"].endswith(".lance")]
    for key in keys:
        if how == "missing":
            client.delete_object(Bucket=bucket, Key=key)
        else:
            client.put_object(Bucket=bucket, Key=key, Body=b"\x00not a lance file\xff" * 64)
    return len(keys)


def _audit(data_dir: Path) -> list[dict[str, str]]:
    path = data_dir / "audit.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [e for e in map(json.loads, lines) if e.get("event") == "shared_index_error"]


def test_a_damaged_shared_version_is_named_plainly_and_its_raw_error_is_audited(
        s3_env: dict[str, str], tmp_path: Path) -> None:
    laptop = tmp_path / "laptop"
    assert cli("index", "--publish", data_dir=tmp_path / "ci").returncode == 0
    assert cli("index", data_dir=laptop).returncode == 0  # a local index to fall back on
    # corrupt: the version opens, its first search fails (mid-session fallback); missing: the
    # version cannot be opened at all
    for table, damage, words in (("incidents", "corrupt", "corrupt"),
                                 ("hashes", "missing", "not found")):
        assert _damage(table, damage)
        done = cli("brief", "--json", ALERT, data_dir=laptop)
        assert done.returncode == 0, done.stderr
        notices = json.loads(done.stdout)["search"]["notices"]
        about = [n for n in notices if "shared index" in n]
        assert any(words in n and "triage index --publish" in n and "built on this laptop" in n
                   for n in about), notices
        assert not [n for n in notices if RAW.search(n)], notices
        assert "\n" not in "".join(about)
        logged = _audit(laptop)[-1]
        assert words in logged["reason"] and RAW.search(logged["detail"]), logged  # raw: there


CARGO = ("lance error: LanceError(IO): Generic S3 error: Error after 0 retries in 1.2ms, max_"
         "retries:1, retry_timeout:3s, source:HTTP status server error (500 Internal Server "
         "Error) for url (http://127.0.0.1:9/b/team/v/x/incidents.lance/_versions/1.manifest), "
         "/home/runner/.cargo/registry/src/index.crates.io-6f17d22bba15001f/lance-io-0.21.0/"
         "src/object_store.rs:617:31")


@pytest.mark.parametrize(("raw", "reason"), [
    (CARGO, "the store answered with an error triage does not recognise"),
    ("lance error: Not found: b/team/v/x/hashes.lance/_versions, /root/.cargo/registry/src/"
     "lance-table-0.21.0/src/io/commit.rs:301:9", "part of the shared version is not found"),
    ("lance error: Corrupt file: failed to fill whole buffer, /root/.cargo/registry/src/"
     "lance-file-0.21.0/src/reader.rs:88:5", "the shared version's data is corrupt"),
    ("lance error: LanceError(IO): Generic memory error: Invalid range 0..5263 for object of "
     "size 1152 bytes, /rustc/2d81/library/core/src/ops/function.rs:250:5",
     "the shared version's data is corrupt"),
    ("lance error: Generic S3 error: Client error with status 403 Forbidden: <?xml version="
     "'1.0'?><Error><Code>AccessDenied</Code></Error>", "the store refused the credentials"),
    ("error sending request for url (http://127.0.0.1:9/b): tcp connect error: Connection "
     "refused (os error 111)", "the store is not reachable"),
])
def test_store_errors_are_told_in_plain_words_with_what_to_do(raw: str, reason: str) -> None:
    error = unavailable_error(Store("s3://b/team"), RuntimeError(raw), "read")
    assert isinstance(error, SharedUnavailable)
    shown = error.render()
    assert reason in error.title and not RAW.search(shown), shown
    assert error.fault is not None and raw.split(",")[0] in error.fault.detail
    assert store_fault(RuntimeError(raw)).todo in error.hint  # and what to do about it


def test_an_unreachable_store_with_nothing_to_fall_back_on_says_so_without_raw_text(
        s3_env: dict[str, str], tmp_path: Path) -> None:
    done = cli("brief", ALERT, data_dir=tmp_path / "laptop",
                    extra_env={"AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"})
    assert done.returncode == 1 and "the store is not reachable" in done.stderr
    assert "AWS_ENDPOINT_URL" in done.stderr and not RAW.search(done.stderr), done.stderr
    assert _audit(tmp_path / "laptop")  # the raw error is kept in the audit log
