"""Sections: the folder tree of a project's cases."""
