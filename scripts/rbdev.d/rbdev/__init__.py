"""rbdev, the harness behind scripts/rbdev, as a package: one module per part
of it, each saying in its docstring what it owns. They import one way, from
common and config at the bottom to cli at the top; `rbdev check-imports`
prints which imports which and fails on a circle."""
