"""ament_python / setuptools build of robot_dynamics (pip install -e . or colcon build).

The interface package robot_dynamics_interfaces (ament_cmake: .srv/.msg) lives in this package's
folder, where colcon's crawl does not look (it stops at the first package.xml). So when colcon runs
this setup.py (``setup.py install``, or ``develop`` with --symlink-install), the install step also
configures, builds and installs robot_dynamics_interfaces with CMake into this package's install
prefix: its Python modules land in the same site-packages as robot_dynamics, its libraries in lib/,
its ament index entry under share/, all covered by the environment hooks colcon writes for this
package. It is skipped when robot_dynamics_interfaces is already on AMENT_PREFIX_PATH in another
prefix (an underlay, or built as a package of its own: colcon.pkg orders it first). pip's builds
(``pip install -e .``: scripts/bootstrap.sh builds the interfaces itself) never do this.
"""

import os
import shutil
import subprocess
import sys
from glob import glob
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.develop import develop
from setuptools.command.install import install

PACKAGE = "robot_dynamics"
INTERFACES = "robot_dynamics_interfaces"
SOURCE = Path(__file__).resolve().parent
INDEX = Path("share", "ament_index", "resource_index", "packages")


def _interfaces_found_elsewhere(prefix: Path) -> str | None:
    """A prefix on AMENT_PREFIX_PATH that already provides the interfaces, other than this build's own
    (in a merged install, colcon's own record of the package tells a separate build from ours)."""
    for entry in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        other = Path(entry)
        if (other / INDEX / INTERFACES).is_file() and (
            other.resolve() != prefix.resolve() or (other / "share" / "colcon-core" / "packages" / INTERFACES).is_file()
        ):
            return entry
    return None


def _underlay_environment() -> dict[str, str]:
    """The build environment, plus the interpreter's own prefix when the ROS 2 packages come from PyPI
    wheels there (no ROS setup.bash sourced): CMake finds ament_cmake and rosidl through
    CMAKE_PREFIX_PATH, and rosidl its type supports through AMENT_PREFIX_PATH."""
    env = dict(os.environ)
    interpreter_prefix = getattr(sys, "real_prefix", sys.prefix)  # colcon's sitecustomize moved sys.prefix
    if (Path(interpreter_prefix) / INDEX / "rosidl_default_generators").is_file():
        for name in ("AMENT_PREFIX_PATH", "CMAKE_PREFIX_PATH"):
            entries = [e for e in env.get(name, "").split(os.pathsep) if e]
            if interpreter_prefix not in entries:
                env[name] = os.pathsep.join([*entries, interpreter_prefix])
    return env


def build_interfaces(command: install | develop) -> None:
    """Configure, build and install robot_dynamics_interfaces into the install prefix of a colcon build."""
    if "COLCON" not in os.environ or not hasattr(sys, "real_prefix"):
        return  # not colcon's Python build task
    prefix = Path(sys.prefix)  # colcon's sitecustomize: this package's install base
    found = _interfaces_found_elsewhere(prefix)
    if found:
        print(f"{PACKAGE}: using {INTERFACES} from {found}", flush=True)
        return
    build_dir = Path(command.get_finalized_command("build").build_base).resolve() / INTERFACES
    env = _underlay_environment()
    search = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    cmake = shutil.which("cmake", path=search)
    if cmake is None:
        raise SystemExit(f"{PACKAGE}: building {INTERFACES} needs cmake")
    jobs = env.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
    print(f"{PACKAGE}: building {INTERFACES} with CMake into {prefix}", flush=True)
    for step, argv in (
        ("configure", [cmake, "-S", str(SOURCE / INTERFACES), "-B", str(build_dir),
                       f"-DCMAKE_INSTALL_PREFIX={prefix}", f"-DPython3_EXECUTABLE={sys.executable}",
                       "-DBUILD_TESTING=OFF"]),
        ("build", [cmake, "--build", str(build_dir), "--target", "install", "--parallel", jobs]),
    ):  # fmt: skip
        if subprocess.run(argv, env=env).returncode:
            raise SystemExit(f"{PACKAGE}: the CMake {step} step of {INTERFACES} failed (its output is above)")


class Install(install):
    def run(self) -> None:
        build_interfaces(self)
        super().run()


class Develop(develop):
    def run(self) -> None:
        if not self.uninstall:
            build_interfaces(self)
        super().run()


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(include=[PACKAGE, f"{PACKAGE}.*"]),
    py_modules=["robot_dynamics_executables"],
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml")),
        (f"share/{PACKAGE}/config/robots", glob("config/robots/*")),
        (f"share/{PACKAGE}/config/sensors", glob("config/sensors/*.yaml")),
    ],
    install_requires=[
        "numpy",
        "scipy",
        "sympy",
        "yourdfpy",
        "trimesh",
        "lxml",
        "pyyaml",
        "rosbags",
        "matplotlib",
        "mujoco",
        "xacro",
    ],
    extras_require={
        # identify --scheduler ADDRESS (an existing Dask cluster); the local process pool needs nothing
        "dask": ["dask", "distributed"],
        "test": [
            "pytest",
            "pytest-timeout",
            "ruff",
            "mypy",
            "types-PyYAML",
            "pin",
            "roboticstoolbox-python",
            "example-robot-data",
        ],
    },
    python_requires=">=3.10",
    zip_safe=True,
    maintainer="robot_dynamics maintainers",
    maintainer_email="maintainers@robot-dynamics.dev",
    description="Serial-manipulator dynamics (Newton-Euler, Lagrange-Euler D/h/c, friction) as ROS 2 nodes and services",
    license="Apache-2.0",
    cmdclass={"install": Install, "develop": Develop},
    entry_points={
        "console_scripts": [
            "robot-dynamics = robot_dynamics.cli:main",
            # through a top-level module: a Ctrl-C while the package imports exits quietly
            "feedforward_node = robot_dynamics_executables:feedforward_node",
            "dynamics_service_node = robot_dynamics_executables:dynamics_service_node",
            "simulator_node = robot_dynamics_executables:simulator_node",
            "robot_dynamics_bringup = robot_dynamics_executables:robot_dynamics_bringup",
            "contact_node = robot_dynamics_executables:contact_node",
        ],
    },
)
