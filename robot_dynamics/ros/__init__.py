"""ROS 2 adapters of robot_dynamics: the only package that imports rclpy and ROS messages.

Nodes (each module has ``main()``, installed as ``ros2 run robot_dynamics <executable>``):

* :mod:`.feedforward_node` (``feedforward_node``): joint states + desired trajectory → feed-forward torques;
* :mod:`.service_node` (``dynamics_service_node``): D/h/c, inverse/forward dynamics and simulation services;
* :mod:`.simulator_node` (``simulator_node``): real-time forward-dynamics simulator;
* :mod:`.bringup` (``robot_dynamics_bringup``): the same nodes composed in one process.

Nothing here is imported by ``robot_dynamics`` itself.
"""
