// The translation unit that builds the tests' precompiled header (wslab_testing.cmake,
// wslab_test_pch): GoogleTest and the standard headers the tests and the library use. Nothing
// is defined here.
