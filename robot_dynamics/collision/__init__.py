"""The collision case (ROS-free parts): the motion into an obstacle, its measures and its report.

:mod:`.case` plans the motion and measures a run; :mod:`.report` writes the table and the plot. The
nodes are driven by :mod:`robot_dynamics.ros.collision_case` (``robot-dynamics collision``).
"""
