-- Failed sign-ins, for throttling (tms/web/throttle.py): kept in the database so that throttling
-- survives a restart and holds across replicas. Rows older than the window are deleted as new
-- failures arrive; `tms admin unlock-user` deletes an account's rows.
CREATE TABLE login_failures (
    address   TEXT NOT NULL,  -- the client's address
    email     TEXT NOT NULL,  -- as typed, lower-cased (the account may not exist)
    failed_at REAL NOT NULL   -- Unix time
);
CREATE INDEX login_failures_address ON login_failures (address, email, failed_at);
CREATE INDEX login_failures_email ON login_failures (email);
