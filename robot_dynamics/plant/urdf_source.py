"""A URDF as the user gives it, made ready for MuJoCo's URDF compiler with the chain options applied.

The chain is chosen exactly as the model loader chooses it (:func:`robot_dynamics.models.urdf_chain.
select_chain`: ``base_link``, ``tip_link``, ``locked_joints``, mimic joints following a locked master,
movable joints off the chain held at zero), so the plant's bodies are the loader's:

* every movable joint that is not a joint of the chain becomes a ``fixed`` joint at its position
  (its ``origin`` composed with ``Rot(axis, q)`` or ``Trans(axis q)``; its ``<mimic>`` dropped): the
  links it carries are welded to the chain link, as the loader merges them into that link's body;
  floating and planar joints off the chain are welded at their origin. Links above ``base_link`` and
  on branches that do not hang from a chain link are then welded to the world, which is what the
  loader's "does not move" means;
* the URDF's inertials are kept exactly: the compiler extension added to the file says
  ``inertiafromgeom="false"`` (no inertia from geometry), ``balanceinertia="false"`` and
  ``fusestatic="false"`` (no fused bodies: the tip link stays a body, the tool point of an external
  force); ``<robot_dynamics>`` elements (this package's extension) are removed;
* meshes: ``<visual>`` elements are removed (the plant does not render; MuJoCo's URDF import discards
  visuals too). A ``<collision>`` mesh keeps its geometry when its file is found and MuJoCo reads its
  format (STL, OBJ, MSH): ``package://PKG/path`` is looked up under ``$AMENT_PREFIX_PATH/share/PKG``,
  the ``$ROS_PACKAGE_PATH`` folders and the folders above the URDF file (a folder named ``PKG``, or
  holding one); a relative path is relative to the URDF file; ``file://`` is a path. Otherwise that
  collision element is dropped and the reason is returned in :attr:`PlantURDF.dropped`.

XML is read with the model loader's safe parser (no entity, DTD or network access).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from lxml import etree

from robot_dynamics.errors import ModelError
from robot_dynamics.model import FloatArray
from robot_dynamics.models.urdf_chain import joint_motion, select_chain
from robot_dynamics.models.urdf_parse import EXTENSION_TAG, parse_xml, read_tree
from robot_dynamics.models.validation import rotation_to_rpy

#: Mesh formats MuJoCo's compiler reads.
MUJOCO_MESH_SUFFIXES = (".stl", ".obj", ".msh")

#: The compiler options the plant needs (see the module docstring).
COMPILER = {
    "inertiafromgeom": "false",
    "balanceinertia": "false",
    "fusestatic": "false",
    "discardvisual": "true",
    "strippath": "false",
    "angle": "radian",
    "autolimits": "true",
}


@dataclass(frozen=True)
class PlantURDF:
    """The URDF text MuJoCo compiles and how its joints map onto the model's."""

    text: str
    joints: tuple[str, ...]  # the chain's joints in model order (the file's names)
    base_link: str
    tip_link: str
    dropped: tuple[str, ...]  # collision geometry left out, each with its reason


def _number(value: float) -> str:
    return repr(float(value)) if value != 0.0 else "0"


def _set_origin(joint: etree._Element, p: FloatArray) -> None:
    origin = joint.find("origin")
    if origin is None:
        origin = etree.SubElement(joint, "origin")
    origin.set("xyz", " ".join(_number(v) for v in p[:3, 3]))
    origin.set("rpy", " ".join(_number(v) for v in rotation_to_rpy(p[:3, :3])))


def _package_roots(package: str, directory: Path | None) -> list[Path]:
    def folders(variable: str) -> list[Path]:
        return [Path(p) for p in os.environ.get(variable, "").split(os.pathsep) if p]

    roots = [prefix / "share" / package for prefix in folders("AMENT_PREFIX_PATH")]
    roots += [folder / package for folder in folders("ROS_PACKAGE_PATH")]
    if directory is not None:
        for folder in [directory, *directory.parents]:
            roots.append(folder if folder.name == package else folder / package)
    return roots


def resolve_mesh(filename: str, directory: Path | None) -> tuple[Path | None, str]:
    """The mesh file of a URDF ``filename`` (or None) and, when None, why it was not found."""
    url = urlparse(filename)
    if url.scheme == "package":
        rest = unquote(url.path).lstrip("/")
        for root in _package_roots(url.netloc, directory):
            if (root / rest).is_file():
                return (root / rest).resolve(), ""
        where = "$AMENT_PREFIX_PATH, $ROS_PACKAGE_PATH" + (" or the folders above the URDF" if directory else "")
        return None, f"package {url.netloc!r} not found in {where}"
    if url.scheme == "file":
        path = Path(unquote(url.path))
    elif url.scheme:
        return None, f"unsupported URI scheme {url.scheme!r}"
    else:
        path = Path(filename)
        if not path.is_absolute():
            if directory is None:
                return None, "a relative path in a URDF given as text (no folder to resolve it in)"
            path = directory / path
    if not path.is_file():
        return None, f"no such file {str(path)!r}"
    return path.resolve(), ""


def _prepare_geometry(root: etree._Element, directory: Path | None) -> list[str]:
    dropped: list[str] = []
    for link in root.findall("link"):
        for visual in link.findall("visual"):
            link.remove(visual)
        for k, collision in enumerate(link.findall("collision")):
            mesh = collision.find("geometry/mesh")
            if mesh is None:
                continue
            filename = mesh.get("filename", "")
            path, reason = resolve_mesh(filename, directory)
            if path is not None and path.suffix.lower() not in MUJOCO_MESH_SUFFIXES:
                reason = f"MuJoCo does not read {path.suffix or 'extension-less'} meshes"
                path = None
            if path is None:
                link.remove(collision)
                dropped.append(f"link[{link.get('name')}]/collision[{k}] {filename!r}: {reason}")
            else:
                mesh.set("filename", str(path))
    return dropped


def _compiler_extension(root: etree._Element) -> None:
    for element in list(root.iter(EXTENSION_TAG)):
        parent = element.getparent()
        if parent is not None:
            parent.remove(element)
    mujoco = root.find("mujoco")
    if mujoco is None:
        mujoco = etree.SubElement(root, "mujoco")
    compiler = mujoco.find("compiler")
    if compiler is None:
        compiler = etree.SubElement(mujoco, "compiler")
    for key, value in COMPILER.items():
        compiler.set(key, value)
    compiler.attrib.pop("meshdir", None)  # mesh file names are absolute


def plant_urdf(
    data: bytes,
    source: str,
    directory: Path | None = None,
    base_link: str | None = None,
    tip_link: str | None = None,
    locked_joints: Mapping[str, float] | None = None,
) -> PlantURDF:
    """The URDF ``data`` (named ``source``; mesh paths relative to ``directory``) ready for MuJoCo.

    Raises :class:`~robot_dynamics.errors.ModelError` as the model loader does for a bad file or chain.
    """
    root = parse_xml(data, source)
    tree = read_tree(root, source)
    chain = select_chain(tree, source, base_link, tip_link, locked_joints)
    moving = {j.name for j in chain.joints}
    data_of = {j.name: j for j in tree.joints}
    for element in root.findall("joint"):
        name = element.get("name", "")
        joint = data_of[name]
        if name in moving or joint.type == "fixed":
            continue
        pose = joint.origin
        if joint.movable:
            pose = pose @ joint_motion(joint, chain.positions.get(name, 0.0))
        element.set("type", "fixed")
        for child in element.findall("mimic"):
            element.remove(child)
        _set_origin(element, pose)
    dropped = _prepare_geometry(root, directory)
    _compiler_extension(root)
    text = etree.tostring(root, encoding="unicode")
    return PlantURDF(text, tuple(j.name for j in chain.joints), chain.base, chain.tip, tuple(dropped))


def plant_urdf_file(
    path: str | Path,
    base_link: str | None = None,
    tip_link: str | None = None,
    locked_joints: Mapping[str, float] | None = None,
) -> PlantURDF:
    """:func:`plant_urdf` of a URDF file (meshes relative to its folder)."""
    file = Path(path)
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise ModelError(str(file), "", f"cannot read the file: {exc.strerror or exc}") from None
    return plant_urdf(data, file.name, file.resolve().parent, base_link, tip_link, locked_joints)
