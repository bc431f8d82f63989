-- Issue 25: the LDAP service account's password, encrypted at rest. A migration cannot encrypt (the key
-- is not in the database), so it only adds the column: at start, tms serve moves every plain
-- bind_password into bind_password_sealed (a Fernet token, purpose "ldap-bind-password" of
-- tms/team/signin/secret_box.py) and empties bind_password (tms.team.ldap.service.seal_plain_passwords).
-- From then on bind_password stays '' (a value written there by an older replica is still read, and
-- sealed at the next save or start).
-- PostgreSQL: postgres/0023_ldap_bind_password_sealed.sql.

ALTER TABLE ldap_settings ADD COLUMN bind_password_sealed TEXT NOT NULL DEFAULT '';
