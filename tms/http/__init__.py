"""HTTP plumbing every domain shares: auth guards, bodies, queries, pages, problems, paging."""
