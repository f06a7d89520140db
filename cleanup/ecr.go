package cleanup

// ECR lifecycle policies. NOT DONE: a stub the ECR model replaces.

func readECRPolicy(file string, data []byte) ([]Policy, error) { return nil, errNotModelled }

func readECRImages(file string, data []byte) (*State, error) { return nil, errNotModelled }
