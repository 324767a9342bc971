"""The language-neutral plan between the model and the templates: what a codec does
(``codec``: field order, fixed-size runs, checks, sizes) and what a machine does
(``machines``: rows, guards, outcomes, handlers). Every target only spells it."""
