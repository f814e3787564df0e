"""Permission policy: rules, the decision engine, approvers."""
