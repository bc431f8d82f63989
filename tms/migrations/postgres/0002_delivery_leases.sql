-- SQLite 0025: a delivery loaded by a dispatcher is leased to it until lease_until; other replicas skip
-- it meanwhile and take it over once the lease has expired (its replica was killed).
ALTER TABLE webhook_deliveries ADD COLUMN lease_owner TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN lease_until TEXT;
