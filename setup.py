"""ament_python / setuptools build of robot_dynamics (pip install -e . or colcon build)."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "robot_dynamics"

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
