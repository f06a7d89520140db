package cleanup

// Harbor tag retention. NOT DONE: a stub the Harbor model replaces.

func readHarborPolicy(file string, data []byte) ([]Policy, error) { return nil, errNotModelled }

func readHarborArtifacts(file string, data []byte) (*State, error) { return nil, errNotModelled }
