"""Import previews: the uploaded file waits in the database between preview and confirmation."""
