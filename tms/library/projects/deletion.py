"""Deleting a project: the project and everything it holds, in one transaction.

Its own module, above the projects service, because it deletes the project's results through the one
writer of results (``tms.runs.writes``), and the runs domain asks the projects service whether a project
takes new runs: were this in ``service.py``, the projects service and the runs would import each other.
Only the projects' handlers import it.
"""

from __future__ import annotations

from tms.attachments import collection as attachment_collection
from tms.attachments.objects import AttachmentStore
from tms.db import Database
from tms.errors import NotFound
from tms.library.projects import store as project_store
from tms.runs import writes
from tms.team.audit import service as audit


async def delete_project(db: Database, tenant_id: str, project_id: str,
                         store: AttachmentStore) -> dict[str, int]:
    """Web-interface only (after the user types the project's name): the project and everything it
    holds, in one transaction; its attachments' objects leave the store once that transaction commits."""
    async with db.transaction() as tx:
        row = await project_store.get_project(tx, tenant_id, project_id)
        if row is None:
            raise NotFound(f"project {project_id} not found")
        object_keys = await project_store.delete_attachments_of(tx, tenant_id, project_id)
        await writes.delete_of_project(tx, tenant_id, project_id)  # the one writer of results
        gone = await project_store.delete_project(tx, tenant_id, project_id)
        counts = {"cases": gone["cases"], "runs": gone["runs"], "attachments": len(object_keys)}
        await audit.record(tx, tenant_id, "project.deleted", "project", project_id, {"name": row["name"], **counts})
        # objects another attachment (of another project) still names stay; the sweep catches a miss
        attachment_collection.forget_after_commit(tx, db, store, object_keys)
    return counts
