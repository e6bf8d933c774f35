"""The closed-loop experiment's ROS-free parts: its motions, its cases and its report.

``robot-dynamics closed-loop`` (:mod:`robot_dynamics.cli.closed_loop`) runs a controller around a MuJoCo
plant that deviates from the robot file, through the real nodes over DDS in lock-step time
(:mod:`robot_dynamics.ros.closed_loop`), in four cases and one reference:

* **A** PD only (``control_law: pd``);
* **B** PD + the feed-forward of the stock robot file (``pd_feedforward``);
* **B-exact** PD + the stock file's inverse dynamics computed offline and sent as the trajectory's
  efforts (``feedforward_source: trajectory``): what B must equal, as the node computes the same;
* **C** ``excitation`` → a recording → ``identify`` → PD + the identified file's feed-forward, with the
  same parameter file as B (only ``robot_config`` changes), on another trajectory than the excitation;
* **C-plain** PD + the torques of a plain weighted least-squares fit of the same recording (identify's
  plain method) sent as the trajectory's efforts (such a fit often makes no robot file): the baseline
  identify's choices are measured against;
* **D** PD + the plant's own exact inverse dynamics (MuJoCo's ``mj_inverse``, friction included) sent as
  the trajectory's efforts, as the plant's drive must be commanded to apply them (behind a drive that
  closes a torque loop on its link-side sensors, the rigid links' torques: the loop supplies the joints'
  friction): the limit a model of the plant can reach.

With a sensor profile (``--sensors``) the simulator measures the plant as a real arm's driver does, the
controller and ``identify`` see only the measured signals, and tracking is scored on the true state.

This package holds what needs no ROS: the motion every case tracks and its efforts
(:mod:`.motion`), the cases (:mod:`.cases`), the settings, gains and node parameter files
(:mod:`.settings`), the tables and the plot (:mod:`.report`) and the identified parameters beside the
plant's (:mod:`.parameters`). The tracking errors are measured on each case's bag by
:func:`robot_dynamics.bag.tracking.tracking`, the code of ``robot-dynamics tracking``.
"""
