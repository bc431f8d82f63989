"""The in-app inbox (issue 26): a user's notifications of mentions, assignments and reviews, the bell's
count, and the mail sent for them when ``[smtp] host`` is set and the user's switch is on."""
