// Empty: the package exists for the modules it builds (see Package.swift).
import Logging
import Clocks
