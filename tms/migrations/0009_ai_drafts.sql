-- AI generations keep their drafts until they are reviewed, so the drafts page is a GET (Post/Redirect/Get:
-- reloading it never asks the model again) and a generation can be saved only once (no duplicate cases
-- from a double click). A row is inserted as 'pending' before the provider is called and counts against
-- the quota from then on, so concurrent requests cannot overrun it; a failed call deletes its row.
ALTER TABLE ai_generations ADD COLUMN status TEXT NOT NULL DEFAULT 'done';   -- pending | done
ALTER TABLE ai_generations ADD COLUMN requirement TEXT;                      -- the text the user pasted
ALTER TABLE ai_generations ADD COLUMN options TEXT;                          -- JSON {tags, priority, layer}
ALTER TABLE ai_generations ADD COLUMN drafts_json TEXT;                      -- JSON [{title, gherkin}]
ALTER TABLE ai_generations ADD COLUMN saved_at TEXT;                         -- set once its drafts are saved
ALTER TABLE ai_generations ADD COLUMN saved_codes TEXT;                      -- JSON [code] of the saved cases
CREATE INDEX ai_generations_recent ON ai_generations (tenant_id, created_at);
