"""Rosbag evaluation of dynamics models (``rosbags``-based, no ROS installation needed).

Modules: :mod:`~robot_dynamics.bag.io` (rosbag2 read/write, sqlite3 and mcap),
:mod:`~robot_dynamics.bag.differentiate` (Savitzky–Golay derivatives on non-uniform stamps),
:mod:`~robot_dynamics.bag.evaluate` (batch model torques, errors, output bag, CSV/JSON),
:mod:`~robot_dynamics.bag.plot` (PNG plots), :mod:`~robot_dynamics.bag.sample` (the sample bag),
:mod:`~robot_dynamics.bag.progress` (stderr progress bar). Import the modules directly; this package
imports nothing so that ``import robot_dynamics.bag.differentiate`` does not load ``rosbags``.
"""
