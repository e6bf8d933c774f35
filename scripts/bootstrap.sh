#!/usr/bin/env bash
# Idempotent environment setup for robot_dynamics on a machine with only Python 3 (3.10-3.12)
# and a C/C++ compiler: a virtual environment in .venv, pinned ROS 2 Kilted wheels, the
# robot_dynamics_interfaces package built with cmake into the venv prefix, the project editable.
#
# usage: scripts/bootstrap.sh [runtime|test]     (test = runtime + test-only references)
# Each step is skipped when its inputs (hashed into a stamp in .venv) did not change.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV="$ROOT/.venv"
PROFILE=${1:-runtime}
cd "$ROOT"

log() { printf '[bootstrap] %s\n' "$*" >&2; }

pick_python() {
    local c
    for c in ${RD_PYTHON:-} python3 python3.12 python3.11 python3.10; do
        if command -v "$c" >/dev/null 2>&1 &&
            "$c" -c 'import sys; sys.exit(not ((3, 10) <= sys.version_info[:2] <= (3, 12)))' 2>/dev/null; then
            echo "$c"
            return 0
        fi
    done
    log "need CPython 3.10, 3.11 or 3.12 (the ROS 2 Kilted wheels exist for those); set RD_PYTHON=/path/to/python"
    return 1
}

hash_of() { cat "$@" | sha256sum | cut -c1-16; }

stamp_ok() { [ -f "$VENV/.stamp-$1" ] && [ "$(cat "$VENV/.stamp-$1")" = "$2" ]; }
stamp_set() { echo "$2" >"$VENV/.stamp-$1"; }

# 1. virtual environment
if [ ! -x "$VENV/bin/python" ]; then
    PY=$(pick_python)
    log "creating .venv with $($PY --version 2>&1)"
    "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
# pip's notes about unreachable local index folders (machine pip.conf) are noise here.
quiet_pip() { "${PIP[@]}" "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
PYVER=$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

# 2. pinned requirements (runtime + ROS + build tools; test adds the references)
REQS=(requirements/runtime.txt requirements/ros.txt requirements/build.txt)
H_TEST=$(hash_of "${REQS[@]}" requirements/test.txt requirements/constraints.txt <(echo "$PYVER"))
[ "$PROFILE" = test ] && REQS+=(requirements/test.txt)
H=$(hash_of "${REQS[@]}" requirements/constraints.txt <(echo "$PYVER"))
# The test profile is a superset of runtime: an up-to-date test install covers runtime too.
if ! stamp_ok "requirements-$PROFILE" "$H" && ! stamp_ok requirements-test "$H_TEST"; then
    log "installing pinned requirements ($PROFILE)"
    ARGS=()
    for r in "${REQS[@]}"; do ARGS+=(-r "$r"); done
    quiet_pip install "${ARGS[@]}" -c requirements/constraints.txt
    # MuJoCo 4 split the `mujoco` distribution into mujoco, mujoco-core and mujoco-studio, which share
    # one import package: pip moving a venv from 3.x to 4.x in place deletes the new bindings with the
    # old files. MuJoCo's own repair: reinstall the three without dependencies.
    if ! "$VENV/bin/python" -c "import mujoco" 2>/dev/null; then
        log "repairing the MuJoCo install (upgraded in place from 3.x)"
        quiet_pip install --force-reinstall --no-deps -c requirements/constraints.txt mujoco mujoco-core mujoco-studio
    fi
    # Fix 1 (docs/ros2-from-pypi.md): the wheels' exported CMake files name the build machine's
    # Python and NumPy include paths; point them at this interpreter's.
    INC=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    NPI=$("$VENV/bin/python" -c 'import numpy; print(numpy.get_include())')
    { grep -rl "/opt/python/cp3" "$VENV/share" --include='*.cmake' 2>/dev/null || true; } | xargs -r sed -i -E \
        "s#/opt/python/cp3[0-9]+-cp3[0-9]+/include/python3\.[0-9]+#$INC#g; s#/opt/python/cp3[0-9]+-cp3[0-9]+/lib/python3\.[0-9]+/site-packages/numpy/_core/include#$NPI#g"
    if grep -rqs "/opt/python/cp3" "$VENV/share" --include='*.cmake'; then
        log "unpatched build-machine paths remain in $VENV/share (see docs/ros2-from-pypi.md)"; exit 1
    fi
    stamp_set "requirements-$PROFILE" "$H"
    rm -f "$VENV/.stamp-interfaces"   # rebuilt against the (re)installed wheels
fi

# 3. robot_dynamics_interfaces, built with cmake + ninja from the venv, installed into the venv prefix
H=$(hash_of $(find robot_dynamics_interfaces -type f | LC_ALL=C sort) <(echo "$PYVER"))
if ! stamp_ok interfaces "$H"; then
    log "building robot_dynamics_interfaces"
    rm -rf build/robot_dynamics_interfaces
    mkdir -p build
    # Fix 2: ament's resource index is found through AMENT_PREFIX_PATH at configure time.
    PATH="$VENV/bin:$PATH" AMENT_PREFIX_PATH="$VENV" "$VENV/bin/cmake" \
        -S robot_dynamics_interfaces -B build/robot_dynamics_interfaces -G Ninja \
        -DCMAKE_MAKE_PROGRAM="$VENV/bin/ninja" \
        -DCMAKE_PREFIX_PATH="$VENV" -DCMAKE_INSTALL_PREFIX="$VENV" \
        -DPython3_EXECUTABLE="$VENV/bin/python" -DBUILD_TESTING=OFF >build/interfaces-configure.log 2>&1 ||
        { cat build/interfaces-configure.log >&2; exit 1; }
    PATH="$VENV/bin:$PATH" AMENT_PREFIX_PATH="$VENV" "$VENV/bin/cmake" \
        --build build/robot_dynamics_interfaces --target install -j2 >build/interfaces-build.log 2>&1 ||
        { tail -50 build/interfaces-build.log >&2; exit 1; }
    "$VENV/bin/python" -c 'from robot_dynamics_interfaces.srv import GetDynamicsCoefficients' ||
        { log "robot_dynamics_interfaces built but does not import"; exit 1; }
    stamp_set interfaces "$H"
fi

# 4. the project itself, editable
H=$(hash_of setup.py setup.cfg package.xml pyproject.toml <(echo "$PYVER"))
if ! stamp_ok editable "$H"; then
    log "installing robot_dynamics (editable)"
    quiet_pip install --no-deps --no-build-isolation -e .
    # The executables exist both where `ros2 run robot_dynamics <name>` looks (<prefix>/lib/robot_dynamics,
    # as setup.cfg asks of colcon builds) and on the venv's PATH (.venv/bin, where pip's editable
    # install puts them).
    mkdir -p "$VENV/lib/robot_dynamics"
    for exe in robot-dynamics feedforward_node dynamics_service_node simulator_node contact_node robot_dynamics_bringup; do
        if [ -f "$VENV/bin/$exe" ] && [ ! -L "$VENV/bin/$exe" ]; then
            ln -sf "../../bin/$exe" "$VENV/lib/robot_dynamics/$exe"
        elif [ -f "$VENV/lib/robot_dynamics/$exe" ] && [ ! -L "$VENV/lib/robot_dynamics/$exe" ]; then
            ln -sf "../lib/robot_dynamics/$exe" "$VENV/bin/$exe"
        else
            log "executable $exe was not installed"; exit 1
        fi
    done
    stamp_set editable "$H"
fi
