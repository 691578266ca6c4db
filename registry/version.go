package registry

// Version is quiver's version, sent to downstream servers as clientInfo.
const Version = "0.1.0"
