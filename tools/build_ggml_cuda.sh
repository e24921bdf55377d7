#!/usr/bin/env bash
# Build a CUDA wheel of ggml-python from its sdist, offline, and install it into a target folder.
#
#   tools/build_ggml_cuda.sh SDIST [WHEEL_DIR] [TARGET]
#
#   SDIST      ggml_python-0.0.45.tar.gz (carried to the machine; no network is needed)
#   WHEEL_DIR  where the wheel and build.log go (default: /tmp/ggml_wheel)
#   TARGET     pip --target folder to install into; put it on PYTHONPATH (default: /tmp/site)
#
# Environment:
#   PYTHON                      interpreter to build for (default: python3)
#   GGML_CMAKE_ARGS             CMake flags (default: CUDA for sm_90 without FlashAttention:
#                               "-DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=OFF")
#   CMAKE_BUILD_PARALLEL_LEVEL  build jobs (default: nproc)
#
# The sdist is unpacked and one stale binding patched first (tools/patch_ggml_python.py: ggml-python
# 0.0.45 binds ggml_backend_cuda_allreduce_tensor, which its vendored ggml declares but no longer
# defines, so `import ggml` fails in every CUDA build); ggml itself is built unmodified.
# The build runs `pip wheel --no-deps --no-build-isolation --no-index`, so the build backend must
# already be importable: ggml-python 0.0.45's [build-system] requires only
# "scikit-build-core[pyproject]>=0.5.1" (its runtime needs: packaging, pathspec; the [pyproject]
# extra is empty in scikit-build-core >= 0.9), plus cmake >= 3.21 and ninja (or make) on PATH and,
# for CUDA, nvcc. Measured: 182 s on a 16-core H200 box (2026-11-22), wheel ~65 MB.
# The install uses --no-deps: numpy and typing_extensions (both come with torch) must already be there.
# Exits non-zero with a message on the first failure; prints the time of each step.
set -euo pipefail

die() { echo "build_ggml_cuda: ERROR: $*" >&2; exit 1; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

[[ $# -ge 1 && $# -le 3 ]] || die "usage: $0 SDIST [WHEEL_DIR] [TARGET]"
SDIST=$1
WHEEL_DIR=${2:-/tmp/ggml_wheel}
TARGET=${3:-/tmp/site}
PY=${PYTHON:-python3}
ARGS=${GGML_CMAKE_ARGS:--DGGML_CUDA=on -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=OFF}
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
WANT_CUDA=0
[[ "${ARGS,,}" == *"-dggml_cuda=on"* ]] && WANT_CUDA=1

T0=$(now)
# --- preflight: everything an offline --no-build-isolation build needs --------------------------
[[ -f "$SDIST" ]] || die "sdist not found: $SDIST"
command -v "$PY" >/dev/null || die "python not found: $PY"
"$PY" -m pip --version >/dev/null 2>&1 || die "$PY has no pip"
SKB=$("$PY" -c 'import scikit_build_core, packaging, pathspec; print(scikit_build_core.__version__)' 2>&1) \
  || die "scikit-build-core (with packaging, pathspec) is not importable by $PY: $SKB"
command -v cmake >/dev/null || "$PY" -c 'import cmake' 2>/dev/null || die "cmake not found (need >= 3.21)"
command -v ninja >/dev/null || command -v make >/dev/null || die "neither ninja nor make found"
for mod in numpy typing_extensions; do  # ggml-python's run-time dependencies (installed with --no-deps)
  "$PY" -c "import $mod" 2>/dev/null || echo "build_ggml_cuda: warning: $mod is not importable by $PY (ggml needs it)" >&2
done
if [[ $WANT_CUDA == 1 ]]; then
  if ! command -v nvcc >/dev/null && [[ -z "${CUDACXX:-}" ]]; then
    for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
      [[ -x "$d/nvcc" ]] && { export PATH="$d:$PATH"; break; }
    done
  fi
  command -v nvcc >/dev/null || [[ -n "${CUDACXX:-}" ]] || die "nvcc not found (put it on PATH or set CUDACXX)"
fi
echo "build_ggml_cuda: $("$PY" --version 2>&1), scikit-build-core $SKB, $(cmake --version 2>/dev/null | head -1)," \
     "ninja $(ninja --version 2>/dev/null || echo -), nvcc $( (nvcc --version 2>/dev/null || true) | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
echo "build_ggml_cuda: CMAKE_ARGS=\"$ARGS\", $CMAKE_BUILD_PARALLEL_LEVEL jobs, sdist $SDIST"

# --- build -----------------------------------------------------------------------------------------
mkdir -p "$WHEEL_DIR"
LOG="$WHEEL_DIR/build.log"
rm -f "$WHEEL_DIR"/ggml_python-*.whl
SRC=$(mktemp -d)
tar xzf "$SDIST" -C "$SRC" || die "cannot unpack $SDIST"
SRC=$(ls -d "$SRC"/ggml_python-* | head -1)
"$PY" "$(dirname "$0")/patch_ggml_python.py" "$SRC" || die "patching the ggml-python sources failed"
T1=$(now)
if ! CMAKE_ARGS="$ARGS" "$PY" -m pip wheel --no-deps --no-build-isolation --no-index -v "$SRC" \
      -w "$WHEEL_DIR" >"$LOG" 2>&1; then
  tail -n 40 "$LOG" >&2
  die "pip wheel failed after $(secs "$T1" "$(now)") s (full log: $LOG)"
fi
WHEEL=$(ls "$WHEEL_DIR"/ggml_python-*.whl 2>/dev/null | head -1 || true)
[[ -n "$WHEEL" ]] || die "pip wheel succeeded but left no ggml_python wheel in $WHEEL_DIR (log: $LOG)"
echo "build_ggml_cuda: built $(basename "$WHEEL") ($(du -m "$WHEEL" | cut -f1) MB) in $(secs "$T1" "$(now)") s"

# --- install ---------------------------------------------------------------------------------------
T2=$(now)
mkdir -p "$TARGET"
"$PY" -m pip install --no-deps --no-index --upgrade --target "$TARGET" "$WHEEL" >>"$LOG" 2>&1 \
  || { tail -n 20 "$LOG" >&2; die "pip install --target $TARGET failed (log: $LOG)"; }
echo "build_ggml_cuda: installed into $TARGET in $(secs "$T2" "$(now)") s"

# --- check what was installed ----------------------------------------------------------------------
CHECK='
import sys, ggml
want_cuda = sys.argv[1] == "1"
print("build_ggml_cuda: ggml from", ggml.__file__, "GGML_USE_CUDA =", ggml.GGML_USE_CUDA)
if want_cuda and not ggml.GGML_USE_CUDA:
    sys.exit("build_ggml_cuda: ERROR: the installed ggml has no CUDA backend (ggml_backend_cuda_init missing)")
if ggml.GGML_USE_CUDA:
    n = ggml.ggml_backend_cuda_get_device_count()
    print("build_ggml_cuda: CUDA devices seen by ggml:", n)
'
PYTHONPATH="$TARGET${PYTHONPATH:+:$PYTHONPATH}" "$PY" -c "$CHECK" "$WANT_CUDA" \
  || die "the installed ggml failed its import check"
echo "build_ggml_cuda: done in $(secs "$T0" "$(now)") s; use: export PYTHONPATH=$TARGET\${PYTHONPATH:+:\$PYTHONPATH}"
