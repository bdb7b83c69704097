"""The private core every layer stands on: the Go library's binding (lib), exceptions
(errors), the user's place in the program (location), element types (dtypes), symbolic
dimensions (symbolic), the one layer that checks the public API's arguments (validate),
and where 0.1.0's module names went (moved_modules). Nothing here imports a layer above."""
