// Package inputfile reads the files a user names on the command line: a
// regular file (or a symlink to one) no larger than a cap, or an error
// naming the path.
package inputfile
