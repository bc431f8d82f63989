"""The library: projects, cases, sections, Gherkin, versions, import and export."""
