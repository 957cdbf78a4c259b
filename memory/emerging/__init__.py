"""Skills: a task described or done again and again, found, counted, and crystallised into a skill
(``patterns``, ``practice``, ``paraphrases``); and a local skill edited, versioned or frozen by
hand (``skill_versions``)."""
