"""Which brush contents each object role compiles to (the add-on's roles beside the core's Contents)."""

from ..core.model.brushes import Contents

#: role -> brush contents, for the roles that are brushes compiled into the level
ROLE_CONTENTS = {
    "STRUCTURAL": Contents.SOLID,
    "DETAIL": Contents.DETAIL,
    "CLIP": Contents.CLIP,
    "NONSOLID": Contents.NONSOLID,
}
CONTENTS_ROLE = {contents: role for role, contents in ROLE_CONTENTS.items()}
