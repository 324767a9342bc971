from wirestream.codegen.cli import main

raise SystemExit(main())
