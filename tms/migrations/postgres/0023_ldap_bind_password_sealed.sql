-- SQLite 0042: the LDAP service account's password, encrypted at rest (issue 25). The column only: at
-- start, tms serve moves every plain bind_password into bind_password_sealed (a Fernet token) and
-- empties bind_password (tms.team.ldap.service.seal_plain_passwords).

ALTER TABLE ldap_settings ADD COLUMN bind_password_sealed TEXT NOT NULL DEFAULT '';
