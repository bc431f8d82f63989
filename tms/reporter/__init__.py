"""The reporter client: turns JUnit XML and Cucumber JSON reports into one ingest request.

It imports nothing from the server, so it runs on any CI runner with the package installed.
"""
