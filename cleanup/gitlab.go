package cleanup

// GitLab cleanup policies. NOT DONE: a stub the GitLab model replaces.

func readGitLabPolicy(file string, data []byte) ([]Policy, error) { return nil, errNotModelled }

func readGitLabTags(file string, data []byte) (*State, error) { return nil, errNotModelled }
