"""AI drafting of test cases: the provider client, the prompt and the parser of the model's answer.

Nothing here touches the database; ``tms.ai.service`` ties these to the quota and the case library.
"""
