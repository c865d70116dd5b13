package migrations

// Files are the migrations, for tests that apply them up to a version.
var Files = files
