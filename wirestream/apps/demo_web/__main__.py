import sys

from wirestream.apps.demo_web import main

sys.exit(main())
