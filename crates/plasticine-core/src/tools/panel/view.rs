//! The panel's view rows: which layers the picture shows (the skin's grid,
//! the muscles, the fat shell, the connective tissue, x-ray). The same
//! toggles as the desk's F2, F4, F8, F5 and F6, so the headset reaches them
//! too; the front end draws with them.

/// How the muscles are drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MuscleView {
    /// Solid.
    Opaque,
    /// See-through.
    #[default]
    Translucent,
    /// Not drawn.
    Hidden,
}

impl MuscleView {
    /// The next in the cycle translucent → opaque → hidden → translucent.
    pub fn next(self) -> Self {
        match self {
            Self::Translucent => Self::Opaque,
            Self::Opaque => Self::Hidden,
            Self::Hidden => Self::Translucent,
        }
    }

    /// Its name on the panel.
    pub fn label(self) -> &'static str {
        match self {
            Self::Opaque => "opaque",
            Self::Translucent => "translucent",
            Self::Hidden => "hidden",
        }
    }
}

/// The layers the picture shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ViewLayers {
    /// The skin's grid drawn as lines.
    pub wireframe: bool,
    /// How the muscles are drawn.
    pub muscles: MuscleView,
    /// The fat layer's inner face drawn, see-through.
    pub fat: bool,
    /// The connective tissue's bands drawn.
    pub bands: bool,
    /// The skin drawn see-through.
    pub xray: bool,
}

impl Default for ViewLayers {
    fn default() -> Self {
        Self {
            wireframe: false,
            muscles: MuscleView::Translucent,
            fat: false,
            bands: false,
            xray: false,
        }
    }
}

/// A toggle's value on the panel.
fn on(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

/// A view row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViewRow {
    /// The skin's grid (F2).
    Wireframe,
    /// The muscles (F4).
    Muscles,
    /// The fat shell (F8).
    Fat,
    /// The connective tissue (F5).
    Bands,
    /// X-ray (F6).
    Xray,
}

impl ViewRow {
    /// The rows, top to bottom.
    pub const ALL: [ViewRow; 5] = [
        Self::Wireframe,
        Self::Muscles,
        Self::Fat,
        Self::Bands,
        Self::Xray,
    ];

    /// Toggles (or, for the muscles, cycles) this row's layer in `view`;
    /// returns the message saying how it is now.
    pub fn press(self, view: &mut ViewLayers) -> String {
        match self {
            Self::Wireframe => {
                view.wireframe = !view.wireframe;
                format!("skin grid {}", on(view.wireframe))
            }
            Self::Muscles => {
                view.muscles = view.muscles.next();
                format!("muscles {}", view.muscles.label())
            }
            Self::Fat => {
                view.fat = !view.fat;
                format!("fat shell {}", on(view.fat))
            }
            Self::Bands => {
                view.bands = !view.bands;
                format!("connective tissue {}", on(view.bands))
            }
            Self::Xray => {
                view.xray = !view.xray;
                format!("x-ray (skin seen through) {}", on(view.xray))
            }
        }
    }

    /// The row's text with its current value.
    pub fn line(self, view: &ViewLayers) -> String {
        let (label, value) = match self {
            Self::Wireframe => ("skin grid", on(view.wireframe)),
            Self::Muscles => ("muscles", view.muscles.label()),
            Self::Fat => ("fat shell", on(view.fat)),
            Self::Bands => ("tissue", on(view.bands)),
            Self::Xray => ("x-ray", on(view.xray)),
        };
        format!("  {label:<13}{value}")
    }

    /// The row's help line.
    pub fn help(self) -> &'static str {
        match self {
            Self::Wireframe => "skin grid: the skin's points and springs drawn as lines (F2)",
            Self::Muscles => "muscles: drawn solid, see-through or not at all (F4)",
            Self::Fat => {
                "fat shell: the fat layer under the skin, its inner face seen through (F8)"
            }
            Self::Bands => "tissue: the connective tissue's bands to the muscles (F5)",
            Self::Xray => "x-ray: the skin drawn see-through, the layers under it showing (F6)",
        }
    }
}
