-- A delivery loaded by a dispatcher is leased to it until lease_until: another replica (PostgreSQL) skips
-- it meanwhile, and takes it over once the lease has expired (the first replica was killed).
ALTER TABLE webhook_deliveries ADD COLUMN lease_owner TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN lease_until TEXT;
