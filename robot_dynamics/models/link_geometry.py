"""The shape of each moving body of a URDF chain: points bounding its collision (else visual) geometry.

For the chain ``base_link -> tip_link`` (with ``locked_joints``) of a URDF file, every URDF link the
chain's joint ``k`` moves (its child link and everything rigidly attached below it: covers, a hand,
locked fingers) contributes the points of its ``<collision>`` elements (or, for a link without
collision geometry, of its ``<visual>`` elements), expressed in the joint frame ``F_k`` of the model
(:mod:`robot_dynamics.models.urdf`): the 8 corners of a box, of a cylinder's and a sphere's bounding
box, the vertices of a mesh (read with ``trimesh``; ``package://NAME/rest`` is looked up in an
ancestor directory of the URDF named ``NAME`` and under ``share/NAME`` of every ``AMENT_PREFIX_PATH``
entry, a plain path relative to the URDF). A body with geometry that cannot be read (a mesh that is
not found or not readable) gets ``None``, as does a body with no geometry at all: the caller then
bounds it another way (:mod:`robot_dynamics.identification.bounds` uses the joint frames).

Used to bound where a link's mass may be when identifying (Wensing, Kim & Slotine 2017).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
from lxml import etree

from ..model import FloatArray
from .urdf import _walk
from .urdf_chain import select_chain
from .urdf_parse import origin_pose, parse_xml, read_tree

UNIT_BOX = np.array([[x, y, z] for x in (-1.0, 1.0) for y in (-1.0, 1.0) for z in (-1.0, 1.0)])


def resolve_mesh(uri: str, urdf: Path) -> Path | None:
    """The file of a mesh URI (module docstring), or None if it is not found."""
    if uri.startswith("file://"):
        candidates = [Path(uri[len("file://") :])]
    elif uri.startswith("package://"):
        package, _, rest = uri[len("package://") :].partition("/")
        candidates = [parent / rest for parent in urdf.resolve().parents if parent.name == package]
        for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
            if prefix:
                candidates.append(Path(prefix) / "share" / package / rest)
    else:
        candidates = [urdf.parent / uri]
    return next((c for c in candidates if c.is_file()), None)


def _mesh_points(element: etree._Element, urdf: Path) -> FloatArray | None:
    file = resolve_mesh(element.get("filename", ""), urdf)
    if file is None:
        return None
    try:
        import trimesh

        mesh = trimesh.load(str(file), force="mesh")
        vertices: FloatArray = np.asarray(getattr(mesh, "vertices", np.zeros((0, 3))), dtype=np.float64)
    except Exception:  # any unreadable mesh: the body is bounded another way (module docstring)
        return None
    if vertices.ndim != 2 or vertices.shape[0] == 0:
        return None
    scale = np.array([float(v) for v in element.get("scale", "1 1 1").split()] or [1.0])
    return vertices * scale


def _shape_points(geometry: etree._Element, urdf: Path) -> FloatArray | None:
    """Points bounding one ``<geometry>`` in its own frame (None: unknown or unreadable shape)."""
    for shape in geometry:
        tag = shape.tag
        try:
            if tag == "box":
                return UNIT_BOX * (0.5 * np.array([float(v) for v in shape.get("size", "").split()]))
            if tag == "cylinder":
                r, length = float(shape.get("radius", "")), float(shape.get("length", ""))
                return UNIT_BOX * np.array([r, r, 0.5 * length])
            if tag == "sphere":
                return UNIT_BOX * float(shape.get("radius", ""))
        except ValueError:
            return None
        if tag == "mesh":
            return _mesh_points(shape, urdf)
    return None


def _link_points(link: etree._Element, urdf: Path, source: str) -> FloatArray | None:
    """The points of a URDF link's collision (else visual) geometry in the link frame; an empty array
    for a link without geometry; None if some of it cannot be read."""
    elements = link.findall("collision") or link.findall("visual")
    points: list[FloatArray] = [np.zeros((0, 3))]
    for k, element in enumerate(elements):
        geometry = element.find("geometry")
        local = None if geometry is None else _shape_points(geometry, urdf)
        if local is None:
            return None
        pose = origin_pose(element.find("origin"), source, f"link[{link.get('name')}]/{element.tag}[{k}]")
        points.append(local @ pose[:3, :3].T + pose[:3, 3])
    return np.concatenate(points)


def link_points(
    path: str | os.PathLike[str],
    base_link: str | None = None,
    tip_link: str | None = None,
    locked_joints: Mapping[str, float] | None = None,
) -> list[FloatArray | None]:
    """Per model joint ``k``: the points ``(K, 3)`` in ``F_k`` of the geometry of the bodies it moves
    (module docstring); None where that geometry is missing or cannot be read."""
    file = Path(path)
    root = parse_xml(file.read_bytes(), file.name)
    tree = read_tree(root, file.name)
    chain = select_chain(tree, file.name, base_link, tip_link, locked_joints)
    owner, pose, _, _ = _walk(chain, file.name)
    elements = {link.get("name"): link for link in root.findall("link")}
    points: list[list[FloatArray] | None] = [[] for _ in chain.joints]
    for name, k in owner.items():
        body = points[k] if k >= 0 else None
        if body is None:
            continue
        local = _link_points(elements[name], file, file.name)
        if local is None:
            points[k] = None
            continue
        body.append(local @ pose[name][:3, :3].T + pose[name][:3, 3])
    out: list[FloatArray | None] = []
    for body in points:
        if body is None or not body or sum(len(p) for p in body) == 0:
            out.append(None)
        else:
            out.append(np.concatenate(body))
    return out
