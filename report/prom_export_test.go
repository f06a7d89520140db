package report

// Update is -update, for the golden files of the package's external tests.
var Update = update
